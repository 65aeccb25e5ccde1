package main

import (
	"strings"
	"testing"
)

func TestBadAddressFailsConstruction(t *testing.T) {
	err := BadAddress("127.0.0.1:6450x")
	if err == nil || !strings.Contains(err.Error(), "6450x") {
		t.Fatalf("redisstore.New of 127.0.0.1:6450x: %v, want an error naming the address", err)
	}
}

func TestUnreachableLogsOneWarnAndIsNotReady(t *testing.T) {
	warns, ready := Unreachable(deadAddr())
	if len(warns) != 1 {
		t.Errorf("%d WARN lines with no observer, want 1: %q", len(warns), warns)
	}
	if ready == nil {
		t.Error("the readiness check says ready though Redis does not answer")
	}
}

func TestRedisGoneStillEnforcesTheLimit(t *testing.T) {
	passed, err := RedisGone(deadAddr(), 30)
	if err != nil {
		t.Fatal(err)
	}
	if passed != 10 {
		t.Errorf("%d of 30 passed with Redis gone and no failure mode chosen, want 10", passed)
	}
}

func TestChiUseWithoutHintLimitsItsRouteOnly(t *testing.T) {
	lines := ChiUse()
	want := []string{"POST /login #1: 200", "POST /login #2: 200", "POST /login #3: 200", "POST /login #4: 429", "POST /login #5: 429", "GET /: 200"}
	if len(lines) != len(want) {
		t.Fatalf("got %q", lines)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("%q, want %q", lines[i], w)
		}
	}
}

func TestClientChosenCostZeroDoesNotLiftTheLimit(t *testing.T) {
	lines := ClientCost()
	for i, want := range []string{"-> 500", "-> 500", "-> 500", "-> 200", "-> 500", "-> 429"} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("%q, want %q", lines[i], want)
		}
	}
}

func TestTwoRulesShowTwoItems(t *testing.T) {
	rl, policy := TwoRules()
	if got := strings.Count(rl, ";r="); got != 2 {
		t.Errorf("RateLimit %q has %d items, want 2 (RateLimit-Policy %q)", rl, got, policy)
	}
}
