package sluicehttp_test

import "net/http"

// discard is a ResponseWriter that keeps nothing but its header.
type discard struct{ h http.Header }

func (w *discard) Header() http.Header         { return w.h }
func (w *discard) Write(p []byte) (int, error) { return len(p), nil }
func (w *discard) WriteHeader(int)             {}
