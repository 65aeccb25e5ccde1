package sluiceotel_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/otlptranslator"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
	"github.com/sluice-go/sluice/observe/sluiceotel"
	"github.com/sluice-go/sluice/sluicetest"
	"github.com/sluice-go/sluice/store/memory"
)

// scraper is Metrics behind the Prometheus exporter, scraped as Prometheus
// scrapes it and read with Prometheus's own text-format parser.
type scraper struct {
	handler http.Handler
	metrics *sluiceotel.Metrics
}

func newScraper(t *testing.T, opts ...sluiceotel.Option) *scraper {
	t.Helper()
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
		otelprom.WithoutScopeInfo())
	require.NoError(t, err)
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	t.Cleanup(func() { require.NoError(t, provider.Shutdown(context.Background())) })
	m, err := sluiceotel.New(provider, opts...)
	require.NoError(t, err)
	return &scraper{handler: promhttp.HandlerFor(registry, promhttp.HandlerOpts{}), metrics: m}
}

// scrape returns the exposition's families by name, and its text.
func (s *scraper) scrape(t *testing.T) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	s.handler.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)
	text := rec.Body.String()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(rec.Body)
	require.NoError(t, err, "the exposition parses")
	return families, text
}

// series returns the value of each counter series of family, by its labels
// other than otel's, encoded "k=v,k=v" in Prometheus's sorted order.
func series(t *testing.T, families map[string]*dto.MetricFamily, family string) map[string]float64 {
	t.Helper()
	f, ok := families[family]
	require.Truef(t, ok, "family %s is exposed", family)
	out := map[string]float64{}
	for _, m := range f.GetMetric() {
		key := ""
		for _, l := range m.GetLabel() {
			if key != "" {
				key += ","
			}
			key += l.GetName() + "=" + l.GetValue()
		}
		out[key] = m.GetCounter().GetValue()
	}
	return out
}

// With the configured policies named, every counter an alert watches has
// its series from the first scrape, at zero; under load, the requests
// admitted are result="acquired", whether near the limit or not.
func TestPrometheusScrape(t *testing.T) {
	shaped := core.MustPolicy(core.PolicyConfig{Name: "shaped", Algorithm: core.LeakyQueue, Quota: 10, Period: time.Second, Burst: 1, MaxDelay: time.Second})
	s := newScraper(t, sluiceotel.WithPolicies(perIP, login, shaped), sluiceotel.WithLimits("api"))
	slots, err := backpressure.New(backpressure.Config{Controller: backpressure.Static(1), Name: "api", Observer: s.metrics.Observe})
	require.NoError(t, err)

	families, text := s.scrape(t)
	t.Logf("at start:\n%s", text)
	const (
		pol  = "sluice_rate_limiting_policy="
		reqs = "sluice_rate_limiting_requests_total"
	)
	for _, p := range []string{"per-ip", "login", "shaped"} {
		for _, want := range []string{
			"sluice_rate_limiting_degraded=false,sluice_rate_limiting_near_limit=false," + pol + p + ",sluice_rate_limiting_result=acquired",
			"sluice_rate_limiting_degraded=false,sluice_rate_limiting_near_limit=true," + pol + p + ",sluice_rate_limiting_result=acquired",
			"sluice_rate_limiting_degraded=false,sluice_rate_limiting_near_limit=false," + pol + p + ",sluice_rate_limiting_result=rejected",
			"sluice_rate_limiting_degraded=true,sluice_rate_limiting_near_limit=false," + pol + p + ",sluice_rate_limiting_result=acquired",
			"sluice_rate_limiting_degraded=true,sluice_rate_limiting_near_limit=false," + pol + p + ",sluice_rate_limiting_result=rejected",
		} {
			v, ok := series(t, families, reqs)[want]
			assert.Truef(t, ok && v == 0, "%s{%s} at 0", reqs, want)
		}
		for _, op := range []string{"take", "adjust", "lease"} {
			for _, et := range []string{"_OTHER", "timeout", "canceled"} {
				want := "error_type=" + et + "," + pol + p + ",sluice_rate_limiting_store_operation=" + op
				v, ok := series(t, families, "sluice_rate_limiting_store_failures_total")[want]
				assert.Truef(t, ok && v == 0, "store failures {%s} at 0", want)
			}
		}
		for _, f := range []string{"sluice_rate_limiting_lease_taken_total", "sluice_rate_limiting_lease_returned_total"} {
			v, ok := series(t, families, f)[pol+p]
			assert.Truef(t, ok && v == 0, "%s{%s} at 0", f, pol+p)
		}
	}
	shed := series(t, families, "sluice_rate_limiting_shed_requests_total")
	assert.Contains(t, shed, pol+"shaped,sluice_rate_limiting_reason=canceled", "a LeakyQueue policy's requests shed")
	assert.Contains(t, shed, "sluice_rate_limiting_class=default,"+pol+"api,sluice_rate_limiting_reason=saturated", "a watched limit's")
	assert.Contains(t, shed, "sluice_rate_limiting_class=critical,"+pol+"api,sluice_rate_limiting_reason=queue_full")
	assert.Len(t, shed, 1+7*3)
	for k, v := range shed {
		assert.Zerof(t, v, "shed %s", k)
	}
	for _, f := range []string{"sluice_rate_limiting_queued_requests", "sluice_rate_limiting_active_requests", "sluice_rate_limiting_concurrency_limit"} {
		assert.Contains(t, families, f)
	}

	// Load: per-ip (a bucket of 3) admits 3 of 5, the last of them near
	// its limit; a request the concurrency limit sheds.
	store, err := memory.New(memory.WithClock(sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))))
	require.NoError(t, err)
	defer store.Close()
	l, err := core.NewLimiter(store, core.WithObserver(s.metrics.Observe))
	require.NoError(t, err)
	for range 5 {
		_, err := l.Take(context.Background(), core.Request{Key: "203.0.113.7", Policy: perIP, Cost: 1})
		require.NoError(t, err)
	}
	held, err := slots.Acquire(context.Background(), "", core.Default)
	require.NoError(t, err)
	_, err = slots.Acquire(context.Background(), "", core.Sheddable)
	require.Error(t, err)
	held.Release()

	families, text = s.scrape(t)
	t.Logf("after load:\n%s", text)
	got := series(t, families, reqs)
	acquired := got["sluice_rate_limiting_degraded=false,sluice_rate_limiting_near_limit=false,"+pol+"per-ip,sluice_rate_limiting_result=acquired"] +
		got["sluice_rate_limiting_degraded=false,sluice_rate_limiting_near_limit=true,"+pol+"per-ip,sluice_rate_limiting_result=acquired"]
	assert.Equal(t, 3.0, acquired, "every request admitted is acquired")
	assert.Equal(t, 1.0, got["sluice_rate_limiting_degraded=false,sluice_rate_limiting_near_limit=true,"+pol+"per-ip,sluice_rate_limiting_result=acquired"])
	assert.Equal(t, 2.0, got["sluice_rate_limiting_degraded=false,sluice_rate_limiting_near_limit=false,"+pol+"per-ip,sluice_rate_limiting_result=rejected"])
	assert.Equal(t, 1.0, series(t, families, "sluice_rate_limiting_shed_requests_total")["sluice_rate_limiting_class=sheddable,"+pol+"api,sluice_rate_limiting_reason=saturated"])
}
