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
func TestSplitPlanArgAsksTheFlagSetWhichFlagsAreBoolean(t *testing.T) {
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
		plan, rest, err := splitPlanArg(fs, args)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if plan != "plan.cue" {
			t.Errorf("%q: plan %q, want plan.cue (rest %q)", args, plan, rest)
		}
		fresh, *quiet = false, false
		if err := fs.Parse(rest); err != nil || fs.NArg() != 0 || !bool(fresh) || !*quiet || fs.Lookup("out").Value.String() != "o" {
			t.Errorf("%q: rest %q parsed to err %v, args %q, brand-new %v, quiet %v, out %s", args, rest, err, fs.Args(), fresh, *quiet, fs.Lookup("out").Value)
		}
	}
	// A flag with a value still takes the next argument, even one that
	// looks like a plan.
	plan, rest, err := splitPlanArg(fs, []string{"--out", "x.cue", "plan.cue"})
	if err != nil || plan != "plan.cue" || !slices.Equal(rest, []string{"--out", "x.cue"}) {
		t.Errorf("--out x.cue plan.cue: plan %q, rest %q, err %v", plan, rest, err)
	}
}
