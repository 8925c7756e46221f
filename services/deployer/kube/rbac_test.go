package kube

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// apiCall is one kind of request to the API server: the verb on a resource
// of an API group, as RBAC names them.
type apiCall struct{ group, resource, verb string }

func (c apiCall) String() string {
	if c.group == "" {
		return c.verb + " " + c.resource
	}
	return c.verb + " " + c.resource + "." + c.group
}

// callRecorder records the API calls made through a rest.Config: those the
// API server served, and those it refused (403).
type callRecorder struct {
	mu             sync.Mutex
	calls, refused map[apiCall]bool
}

func (r *callRecorder) wrap(cfg *rest.Config) {
	r.calls, r.refused = map[apiCall]bool{}, map[apiCall]bool{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if c, ok := parseAPICall(req); ok && err == nil {
				r.mu.Lock()
				if resp.StatusCode == http.StatusForbidden {
					r.refused[c] = true
				} else {
					r.calls[c] = true
				}
				r.mu.Unlock()
			}
			return resp, err
		})
	})
}

func (r *callRecorder) list() []apiCall { return r.sorted(r.calls) }

func (r *callRecorder) sorted(m map[apiCall]bool) []apiCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []apiCall
	for c := range m {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b apiCall) int { return strings.Compare(a.String(), b.String()) })
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// parseAPICall reads RBAC's verb, group and resource off a request path:
// /api/v1/namespaces/NS/RESOURCE[/NAME[/SUB]] or
// /apis/GROUP/VERSION/namespaces/NS/RESOURCE[/NAME[/SUB]].
func parseAPICall(req *http.Request) (apiCall, bool) {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	var c apiCall
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		c.group, parts = parts[1], parts[3:]
	default:
		return c, false
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	if len(parts) == 0 {
		return c, false
	}
	c.resource = parts[0]
	named := len(parts) >= 2
	if len(parts) >= 3 {
		c.resource += "/" + parts[2]
	}
	switch req.Method {
	case http.MethodGet:
		switch {
		case req.URL.Query().Get("watch") == "true":
			c.verb = "watch"
		case named:
			c.verb = "get"
		default:
			c.verb = "list"
		}
	case http.MethodPost:
		c.verb = "create"
	case http.MethodPut:
		c.verb = "update"
	case http.MethodPatch:
		c.verb = "patch"
	case http.MethodDelete:
		c.verb = "delete"
		if !named {
			c.verb = "deletecollection"
		}
	default:
		return c, false
	}
	return c, true
}

// tolerated403 are the calls the deployer makes knowing it may be refused,
// and does without: reading a pod's node tells a kwok node (simulated
// drivers), and the pod tells it otherwise (drivers.go, simulated).
var tolerated403 = map[apiCall]bool{{"", "nodes", "get"}: true}

// checkRBAC holds the deployer's Role to what it used: every call it made
// was served, or refused where it does without (tolerated403); each is
// allowed to its service account (SubjectAccessReview); every rule of the
// Role was used; calls it never makes are refused.
func checkRBAC(t *testing.T, ctx context.Context, admin kubernetes.Interface, ns, account, role string, rec *callRecorder) {
	t.Helper()
	used := rec.list()
	for _, c := range rec.sorted(rec.refused) {
		if !tolerated403[c] {
			t.Errorf("the API server refused the deployer %s (403): its Role lacks it", c)
		}
	}
	user := fmt.Sprintf("system:serviceaccount:%s:%s", ns, account)
	allowed := func(c apiCall) (bool, string) {
		t.Helper()
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   user,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: c.verb, Group: c.group, Resource: strings.Split(c.resource, "/")[0],
				Subresource: strings.TrimPrefix(strings.TrimPrefix(c.resource, strings.Split(c.resource, "/")[0]), "/"),
			},
		}}
		got, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("SubjectAccessReview %s: %v", c, err)
		}
		return got.Status.Allowed, got.Status.Reason
	}
	for _, c := range used {
		if ok, why := allowed(c); !ok {
			t.Errorf("the deployer makes %s, which its Role does not allow (%s)", c, why)
		}
	}
	r, err := admin.RbacV1().Roles(ns).Get(ctx, role, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	usedSet := map[apiCall]bool{}
	for _, c := range used {
		usedSet[c] = true
	}
	var granted []string
	for _, rule := range r.Rules {
		for _, g := range rule.APIGroups {
			for _, res := range rule.Resources {
				for _, v := range rule.Verbs {
					c := apiCall{g, res, v}
					granted = append(granted, c.String())
					if !usedSet[c] {
						t.Errorf("Role %s grants %s, which the deployer never did here: drop it, or cover the path that needs it", role, c)
					}
				}
			}
		}
	}
	t.Logf("Role %s grants %d calls, the deployer made %d: %v", role, len(granted), len(used), used)
	for _, c := range []apiCall{
		{"", "secrets", "get"}, {"", "secrets", "list"}, {"", "secrets", "update"}, {"", "secrets", "patch"},
		{"", "pods/exec", "create"}, {"", "pods", "create"},
		{"apps", "deployments", "update"}, {"apps", "deployments", "patch"}, {"", "configmaps", "create"},
		{"rbac.authorization.k8s.io", "roles", "create"}, {"", "namespaces", "create"}, {"", "nodes", "list"},
	} {
		if ok, _ := allowed(c); ok {
			t.Errorf("the deployer's Role allows %s, which it never needs", c)
		}
	}
}
