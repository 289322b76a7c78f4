//go:build race

package sim

// raceEnabled: the race detector slows everything several times, so tight
// timing assertions are skipped under it (the logic is still exercised).
const raceEnabled = true
