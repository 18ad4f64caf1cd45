// Command wire speaks the scheduler extender's HTTP protocol as kube-scheduler's HTTPExtender does, with the
// Go types of k8s.io/kube-scheduler/extender/v1 at the version its go.mod (or -modfile) pins, so that the
// tests can hold kubeletemu's extender to the real encoding:
//
//	wire version
//	    the k8s.io/kube-scheduler version this binary was built with
//	wire encode-request <verb> < description.json
//	    the request body HTTPExtender sends for <verb> (filter, prioritize, preempt, bind), built from a
//	    description of the scheduler's side (description.go) as pkg/scheduler/extender.go builds it, then
//	    json.Marshal'ed as its send() does
//	wire decode-reply <verb> -context description.json < reply-body
//	    decodes a reply body as send() does (json.NewDecoder(resp.Body).Decode into the v1 type) and prints
//	    {"canonical": <json.Marshal of what was decoded>, "reads": <what the scheduler reads from it>}
//	wire roundtrip request|reply <verb> < body
//	    decodes a body into its v1 type and fails unless json.Marshal gives back the same bytes
//
// Read at k8s.io/kubernetes v1.37.2 and v1.34.7 (pkg/scheduler/extender.go, schedule_one.go,
// framework/preemption/preemption.go); docs/extender-wire.md tabulates what is reproduced here.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
)

const usage = `usage:
  wire version
  wire encode-request <filter|prioritize|preempt|bind> < description.json
  wire decode-reply <filter|prioritize|preempt|bind> -context description.json < reply-body
  wire roundtrip <request|reply> <filter|prioritize|preempt|bind> < body`

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "wire:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "version":
		version, err := kubeSchedulerVersion()
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, version)
		return err
	case "encode-request":
		if len(args) != 2 {
			return errors.New(usage)
		}
		desc, err := readDescription(stdin)
		if err != nil {
			return err
		}
		body, err := encodeRequest(args[1], desc)
		if err != nil {
			return err
		}
		_, err = stdout.Write(body)
		return err
	case "decode-reply":
		return decodeReplyCommand(args[1:], stdin, stdout)
	case "roundtrip":
		if len(args) != 3 {
			return errors.New(usage)
		}
		body, err := io.ReadAll(stdin)
		if err != nil {
			return err
		}
		return roundtrip(args[1], args[2], body)
	}
	return errors.New(usage)
}

func decodeReplyCommand(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	verb := args[0]
	flags := flag.NewFlagSet("decode-reply", flag.ContinueOnError)
	contextFile := flags.String("context", "", "the description the request was encoded from")
	if err := flags.Parse(args[1:]); err != nil {
		return err
	}
	if *contextFile == "" || flags.NArg() != 0 {
		return errors.New(usage)
	}
	file, err := os.Open(*contextFile)
	if err != nil {
		return err
	}
	defer file.Close()
	desc, err := readDescription(file)
	if err != nil {
		return fmt.Errorf("%s: %w", *contextFile, err)
	}
	body, err := io.ReadAll(stdin)
	if err != nil {
		return err
	}
	decoded, err := decodeReply(verb, desc, body)
	if err != nil {
		return err
	}
	out, err := json.Marshal(decoded)
	if err != nil {
		return err
	}
	_, err = stdout.Write(append(out, '\n'))
	return err
}

// roundtrip decodes body into the v1 type of the request or reply of verb, strictly (no unknown field, one
// value), and requires json.Marshal to give back the same bytes: a golden file must be what Go writes.
func roundtrip(kind, verb string, body []byte) error {
	value, err := newMessage(kind, verb)
	if err != nil {
		return err
	}
	decoder := json.NewDecoder(bytes.NewReader(body))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(value); err != nil {
		return fmt.Errorf("%s %s: %w", verb, kind, err)
	}
	if decoder.More() {
		return fmt.Errorf("%s %s: data after the JSON value", verb, kind)
	}
	again, err := json.Marshal(value)
	if err != nil {
		return err
	}
	if !bytes.Equal(again, body) {
		return fmt.Errorf("%s %s is not json.Marshal's form; it re-encodes as:\n%s", verb, kind, again)
	}
	return nil
}

// kubeSchedulerVersion is the k8s.io/kube-scheduler module this binary was built with (from its build
// information), so that a test can tell the binary of each pinned version apart.
func kubeSchedulerVersion() (string, error) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "", errors.New("no build information in this binary")
	}
	for _, dep := range info.Deps {
		if dep.Path == "k8s.io/kube-scheduler" {
			return dep.Version, nil
		}
	}
	return "", errors.New("k8s.io/kube-scheduler is not among this binary's modules")
}
