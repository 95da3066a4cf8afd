#!/usr/bin/env bash
# Regenerates messages.pb.go from messages.proto: needs protoc (Debian's protobuf-compiler)
# and protoc-gen-go (go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.33.0).
set -euo pipefail
cd "$(dirname "$0")"
actor=$(go list -m -f '{{.Dir}}' github.com/asynkron/protoactor-go)/actor
protoc -I . -I "$actor" --go_out=. --go_opt=paths=source_relative messages.proto
