// Command protogen compiles a .proto file without protoc and runs the Go
// plugins (protoc-gen-go, protoc-gen-go-grpc) on it, as protoc would: the
// machines that build scaleplane have no protoc, and the generated stubs
// are committed and checked by `make verify`.
//
//	go run . -out DIR -M FILE=IMPORTPATH FILE.proto
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"
)

// plugins run in order; each is a tool of this module (go.mod), so its
// version is pinned there.
var plugins = []string{"protoc-gen-go", "protoc-gen-go-grpc"}

func main() {
	out := flag.String("out", "", "folder the generated files are written to")
	var mapping stringList
	flag.Var(&mapping, "M", "FILE=IMPORTPATH: the Go import path of a .proto file (protoc's M option), repeatable")
	flag.Parse()
	if *out == "" || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: protogen -out DIR [-M FILE=IMPORTPATH]... FILE.proto")
		os.Exit(2)
	}
	if err := run(context.Background(), flag.Arg(0), *out, mapping); err != nil {
		fmt.Fprintln(os.Stderr, "protogen:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, protoPath, out string, mapping []string) error {
	dir, file := filepath.Split(protoPath)
	c := protocompile.Compiler{
		Resolver:       &protocompile.SourceResolver{ImportPaths: []string{dir}},
		SourceInfoMode: protocompile.SourceInfoStandard,
	}
	files, err := c.Compile(ctx, file)
	if err != nil {
		return fmt.Errorf("compile %s: %w", protoPath, err)
	}
	fd := protodesc.ToFileDescriptorProto(files[0])
	params := ""
	for i, m := range mapping {
		if i > 0 {
			params += ","
		}
		params += "M" + m
	}
	req := &pluginpb.CodeGeneratorRequest{
		FileToGenerate: []string{file},
		Parameter:      proto.String(params),
		ProtoFile:      []*descriptorpb.FileDescriptorProto{fd},
	}
	in, err := proto.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	for _, p := range plugins {
		if err := runPlugin(ctx, p, in, out); err != nil {
			return err
		}
	}
	return nil
}

// runPlugin runs one plugin through `go tool` and writes the files it
// answers with.
func runPlugin(ctx context.Context, plugin string, in []byte, out string) error {
	cmd := exec.CommandContext(ctx, "go", "tool", plugin)
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", plugin, err, stderr.String())
	}
	resp := &pluginpb.CodeGeneratorResponse{}
	if err := proto.Unmarshal(stdout.Bytes(), resp); err != nil {
		return fmt.Errorf("%s: decode response: %w", plugin, err)
	}
	if resp.Error != nil {
		return fmt.Errorf("%s: %s", plugin, resp.GetError())
	}
	for _, f := range resp.File {
		if f.GetInsertionPoint() != "" {
			return errors.New(plugin + ": insertion points are not supported")
		}
		path := filepath.Join(out, filepath.Base(f.GetName()))
		if err := os.WriteFile(path, []byte(f.GetContent()), 0o644); err != nil {
			return fmt.Errorf("%s: %w", plugin, err)
		}
	}
	return nil
}

type stringList []string

func (s *stringList) String() string     { return fmt.Sprint(*s) }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }
