package main

import (
	"flag"
	"io"
	"slices"
	"testing"
)

// boolValue is a boolean flag of its own type: only IsBoolFlag says so.
type boolValue bool

func (b *boolValue) String() string   { return "false" }
func (b *boolValue) Set(string) error { *b = true; return nil }
func (b *boolValue) IsBoolFlag() bool { return true }

// The plan may stand anywhere among the flags; which flags take a value
// is the flag set's to say, so a boolean flag added to the set (of any
// Value type) never swallows the plan, and no list in the parser needs it.
func TestParseInterspersedAsksTheFlagSetWhichFlagsAreBoolean(t *testing.T) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.String("out", "runs", "")
	quiet := fs.Bool("quiet", false, "")
	var fresh boolValue
	fs.Var(&fresh, "brand-new", "a boolean flag the parser has never heard of")
	for _, args := range [][]string{
		{"--brand-new", "plan.cue", "--out", "o", "-quiet"},
		{"--out", "o", "plan.cue", "--brand-new", "-quiet"},
		{"-quiet", "--out=o", "--brand-new", "plan.cue"},
	} {
		fresh, *quiet = false, false
		pos, err := parseInterspersed(fs, args)
		if err != nil || !slices.Equal(pos, []string{"plan.cue"}) || !bool(fresh) || !*quiet || fs.Lookup("out").Value.String() != "o" {
			t.Errorf("%q: positional %q, err %v, brand-new %v, quiet %v, out %s", args, pos, err, fresh, *quiet, fs.Lookup("out").Value)
		}
	}
	// A flag with a value still takes the next argument, even one that
	// looks like a plan; every positional argument is kept, in order.
	pos, err := parseInterspersed(fs, []string{"a.cue", "--out", "x.cue", "plan.cue", "-quiet", "b.cue"})
	if err != nil || !slices.Equal(pos, []string{"a.cue", "plan.cue", "b.cue"}) || fs.Lookup("out").Value.String() != "x.cue" {
		t.Errorf("a.cue --out x.cue plan.cue -quiet b.cue: positional %q, out %s, err %v", pos, fs.Lookup("out").Value, err)
	}
	// A flag the set does not know is refused, wherever it stands.
	if _, err := parseInterspersed(fs, []string{"plan.cue", "--nope"}); err == nil {
		t.Error("an unknown flag after the plan was accepted")
	}
}
