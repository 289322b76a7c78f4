package junit

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf8"
)

// render writes the document as XML: UTF-8, two-space indentation, the
// attributes in a fixed order, counts summed from the testcases. It is
// what the schema in testdata/junit.xsd describes (JUnit as Jenkins'
// xUnit plugin and Apache Ant's schema take it): the root's attributes
// are those Jenkins declares (name, tests, failures, errors, time); the
// run's timestamp (UTC, without a zone, as Ant's schema has it) and
// hostname are on every suite, with the ids and package Ant requires of
// a suite in <testsuites>.
func render(doc *testsuites) []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	var tests, failures, errors int
	for _, s := range doc.suites {
		t, f, e, _ := counts(s)
		tests, failures, errors = tests+t, failures+f, errors+e
	}
	b.WriteString("<testsuites")
	attr(&b, "name", doc.name)
	attr(&b, "tests", strconv.Itoa(tests))
	attr(&b, "failures", strconv.Itoa(failures))
	attr(&b, "errors", strconv.Itoa(errors))
	attr(&b, "time", seconds(doc.time))
	b.WriteString(">\n")
	for i, s := range doc.suites {
		t, f, e, sk := counts(s)
		b.WriteString("  <testsuite")
		attr(&b, "name", s.name)
		attr(&b, "tests", strconv.Itoa(t))
		attr(&b, "failures", strconv.Itoa(f))
		attr(&b, "errors", strconv.Itoa(e))
		attr(&b, "skipped", strconv.Itoa(sk))
		attr(&b, "time", seconds(s.time))
		attr(&b, "timestamp", s.timestamp)
		attr(&b, "hostname", s.hostname)
		attr(&b, "id", strconv.Itoa(i))
		attr(&b, "package", s.pkg)
		b.WriteString(">\n")
		if len(s.props) == 0 {
			b.WriteString("    <properties/>\n")
		} else {
			b.WriteString("    <properties>\n")
			for _, p := range s.props {
				b.WriteString("      <property")
				attr(&b, "name", p[0])
				attr(&b, "value", p[1])
				b.WriteString("/>\n")
			}
			b.WriteString("    </properties>\n")
		}
		for _, tc := range s.cases {
			b.WriteString("    <testcase")
			attr(&b, "name", tc.name)
			attr(&b, "classname", tc.classname)
			attr(&b, "time", seconds(tc.time))
			if tc.result == resultOK && tc.out == "" {
				b.WriteString("/>\n")
				continue
			}
			b.WriteString(">\n")
			if tc.result != resultOK {
				b.WriteString("      <" + tc.result)
				if tc.result != resultSkipped {
					attr(&b, "type", tc.typ)
				}
				attr(&b, "message", tc.message)
				if tc.body == "" {
					b.WriteString("/>\n")
				} else {
					b.WriteString(">")
					text(&b, tc.body)
					b.WriteString("</" + tc.result + ">\n")
				}
			}
			if tc.out != "" {
				b.WriteString("      <system-out>")
				text(&b, tc.out)
				b.WriteString("</system-out>\n")
			}
			b.WriteString("    </testcase>\n")
		}
		b.WriteString("    <system-out/>\n    <system-err/>\n  </testsuite>\n")
	}
	b.WriteString("</testsuites>\n")
	return b.Bytes()
}

func counts(s *testsuite) (tests, failures, errors, skipped int) {
	for _, tc := range s.cases {
		tests++
		switch tc.result {
		case resultFailure:
			failures++
		case resultError:
			errors++
		case resultSkipped:
			skipped++
		}
	}
	return
}

// seconds formats a duration in seconds as an xs:decimal, to the
// millisecond; what is not a duration (NaN, negative) is 0.
func seconds(s float64) string {
	if math.IsNaN(s) || math.IsInf(s, 0) || s < 0 {
		s = 0
	}
	return strconv.FormatFloat(s, 'f', 3, 64)
}

func attr(b *bytes.Buffer, name, value string) {
	b.WriteString(" " + name + `="`)
	escape(b, value, true)
	b.WriteByte('"')
}

func text(b *bytes.Buffer, s string) { escape(b, s, false) }

// escape writes s as XML 1.0 character data (or, with inAttr, an
// attribute value): markup characters as entities, a line break or tab
// in an attribute as a character reference (so that it survives
// attribute normalisation), a carriage return always so; characters XML
// 1.0 cannot carry at all (control characters, invalid UTF-8, U+FFFE and
// U+FFFF) as U+FFFD.
func escape(b *bytes.Buffer, s string, inAttr bool) {
	for _, r := range s {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '"' && inAttr:
			b.WriteString("&quot;")
		case r == '\r':
			b.WriteString("&#13;")
		case (r == '\n' || r == '\t') && inAttr:
			b.WriteString("&#" + strconv.Itoa(int(r)) + ";")
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0xFFFE || r == 0xFFFF || r == utf8.RuneError:
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteRune(r)
		}
	}
}
