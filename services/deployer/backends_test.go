package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/benchq/benchq/services/deployer/kube"
	"github.com/benchq/benchq/services/deployer/local"
)

func TestNewBackend(t *testing.T) {
	if b, err := NewBackend(BackendConfig{Kind: "local", Root: "x"}, slog.New(slog.DiscardHandler)); err != nil || b.(*local.Local).Root != "x" {
		t.Errorf("local: %v, %v", b, err)
	}
	if _, err := NewBackend(BackendConfig{Kind: "docker"}, slog.New(slog.DiscardHandler)); err == nil || err.Error() != `unknown backend "docker": use local or kubernetes` {
		t.Errorf("unknown: %v", err)
	}
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: bench}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := NewBackend(BackendConfig{Kind: "kubernetes", Kubeconfig: kc}, slog.New(slog.DiscardHandler))
	if err != nil || b.(*kube.Kube).Namespace != "bench" {
		t.Errorf("kubernetes from kubeconfig: %+v, %v", b, err)
	}
	b, err = NewBackend(BackendConfig{Kind: "kubernetes", Kubeconfig: kc, Namespace: "other"}, slog.New(slog.DiscardHandler))
	if err != nil || b.(*kube.Kube).Namespace != "other" {
		t.Errorf("kubernetes with namespace: %+v, %v", b, err)
	}
	if _, err := NewBackend(BackendConfig{Kind: "kubernetes", Kubeconfig: filepath.Join(t.TempDir(), "missing")}, slog.New(slog.DiscardHandler)); err == nil {
		t.Error("a missing kubeconfig must fail")
	}
}
