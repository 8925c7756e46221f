package kube

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/natsauth"
	"github.com/benchq/benchq/internal/startup"
	"github.com/benchq/benchq/services/deployer/backend"
)

// annotationAttempt on a driver Job and its pods: the phase attempt its
// agents serve.
const annotationAttempt = "benchq.io/attempt"

// DriverJob returns the Job of a phase's driver agents, named
// bq-<code>-<phase lower-cased> (plus -a<attempt> for a re-run), with
// component loader or benchmarker. Each pod is one agent named after the
// pod; the agent reads BENCHQ_AGENT_EXPERIMENT and BENCHQ_AGENT_PHASE (take
// only this phase's shards) and BENCHQ_AGENT_MAX_SHARDS=1 (exit after one
// shard) — see docs/kubernetes.md.
func DriverJob(d backend.DriverSpec, namespace string) (*batchv1.Job, error) {
	component := componentBenchmarker
	if d.Kind == contracts.KindLoad {
		component = componentLoader
	}
	if d.Attempt < 1 {
		d.Attempt = 1
	}
	name := namePrefix + strings.ToLower(d.Code) + "-" + strings.ToLower(d.Phase)
	if d.Attempt > 1 {
		name += "-a" + strconv.Itoa(d.Attempt)
	}
	if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
		return nil, fmt.Errorf("%w: driver job %q of phase %q: %s", backend.ErrInvalidName, name, d.Phase, strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(d.Phase); len(errs) > 0 {
		return nil, fmt.Errorf("%w: phase %q is not a label value: %s", backend.ErrInvalidName, d.Phase, strings.Join(errs, "; "))
	}
	if d.Shards < 1 || d.Image == "" || d.NATSURL == "" {
		return nil, fmt.Errorf("%w: driver job %s needs shards (got %d), an image and a NATS URL", backend.ErrBadSpec, name, d.Shards)
	}
	names, err := namesFor(d.Code, d.Configuration)
	if err != nil {
		return nil, err
	}
	s := backend.Spec{Code: d.Code, Configuration: d.Configuration}
	labels := labelsFor(s, d.DBMS, component)
	labels[labelPhase] = d.Phase
	pod := corev1.PodSpec{
		RestartPolicy:                corev1.RestartPolicyNever,
		AutomountServiceAccountToken: ptr.To(false),
		EnableServiceLinks:           ptr.To(false),
		SecurityContext:              podSecurity(),
		Containers: []corev1.Container{{
			Name:            "driver-agent",
			Image:           d.Image,
			SecurityContext: nonRootSecurity(benchqUID),
			Env: []corev1.EnvVar{
				{Name: "BENCHQ_POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
				{Name: "BENCHQ_AGENT_NAME", Value: "$(BENCHQ_POD_NAME)"},
				{Name: "BENCHQ_NATS_URL", Value: d.NATSURL},
				{Name: "BENCHQ_AGENT_EXPERIMENT", Value: d.Code},
				{Name: "BENCHQ_AGENT_PHASE", Value: d.Phase},
				{Name: "BENCHQ_AGENT_MAX_SHARDS", Value: "1"},
				// Its SUT's Service (objects.go, the endpoint of sut.ready):
				// the only host the pod sends the password below to.
				{Name: startup.SUTHostsEnv, Value: serviceHost(names.Base, namespace)},
			},
		}},
	}
	if d.SeedSecret != "" {
		// The kubelet reads the Secret; the deployer never does.
		pod.Containers[0].Env = append(pod.Containers[0].Env, corev1.EnvVar{Name: natsauth.SeedValueEnv, ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: d.SeedSecret}, Key: natsauth.SeedValueEnvOf(natsauth.Agent)}}})
	}
	// The SUT's own password (Kube.ensurePassword): the pod's agent serves
	// this configuration's shards only.
	pod.Containers[0].Env = append(pod.Containers[0].Env, corev1.EnvVar{Name: startup.SUTPasswordEnv, ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: names.Password}, Key: startup.SUTPasswordEnv}}})
	if d.Node != "" {
		pod.NodeSelector = map[string]string{corev1.LabelHostname: d.Node}
	}
	return &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels,
			Annotations: map[string]string{annotationAttempt: strconv.Itoa(d.Attempt)}},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To(int32(d.Shards)),
			Completions: ptr.To(int32(d.Shards)),
			// A failed shard is retried by JetStream's redelivery to
			// another agent; the Job replaces its pod once per shard.
			BackoffLimit: ptr.To(int32(d.Shards)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels), Annotations: map[string]string{
					"benchq.io/shards": strconv.Itoa(d.Shards), annotationAttempt: strconv.Itoa(d.Attempt)}},
				Spec: pod,
			},
		},
	}, nil
}

// StartDrivers creates the phase's driver Job (or finds it: idempotent)
// and returns its name; teardown deletes it with the configuration.
func (k *Kube) StartDrivers(ctx context.Context, d backend.DriverSpec) (string, error) {
	if d.Image == "" {
		d.Image = k.DriverImage
	}
	if d.NATSURL == "" {
		d.NATSURL = k.DriverNATSURL
	}
	if d.SeedSecret == "" {
		d.SeedSecret = k.DriverSeedSecret
	}
	j, err := DriverJob(d, k.Namespace)
	if err == nil {
		s := backend.Spec{Code: d.Code, Configuration: d.Configuration}
		err = k.retry(ctx, func(ctx context.Context) error { return ensure(ctx, k.Client.BatchV1().Jobs(k.Namespace), j, s) })
	}
	if err != nil {
		if permanent(err) {
			return "", backend.Refused(err)
		}
		return "", err
	}
	return j.Name, nil
}

// WaitDrivers waits until the phase's driver Job completed (every agent
// exited 0) or failed.
func (k *Kube) WaitDrivers(ctx context.Context, d backend.DriverSpec, name string) error {
	return k.wait(ctx, backend.Spec{Code: d.Code, Configuration: d.Configuration}, "driver job "+name, func(ctx context.Context) error {
		return k.jobComplete(ctx, name)
	})
}
