package kube

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// Pod security (docs/kubernetes.md, "Pod Security"). Every pod the deployer
// makes passes the Pod Security Standards' baseline level, which deploy/k8s'
// namespace enforces, and what can passes restricted: the drivers and the
// exporters run as non-root users without a capability; the DBMS images,
// whose entrypoints start as root to hand the data directory to the
// database user and step down to it (docker-entrypoint.sh: chown, gosu),
// keep only the capabilities that takes. Every pod runs under the
// runtime's default seccomp profile, and no process may gain privileges.

// stepDown are the capabilities a DBMS image's entrypoint needs to chown
// its data directory and switch to the database user.
var stepDown = []corev1.Capability{"CHOWN", "DAC_OVERRIDE", "FOWNER", "SETGID", "SETUID"}

// Users the non-root images run as: benchq's own (the Dockerfile's user
// benchq) and the exporters' (nobody; their images name the user, which
// the kubelet cannot check against runAsNonRoot, so the uid is given).
const (
	benchqUID int64 = 10001
	nobodyUID int64 = 65534
)

func podSecurity() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
}

// dbmsSecurity: a DBMS server's container (baseline).
func dbmsSecurity() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: stepDown},
	}
}

// toolSecurity: a DBMS image's client (psql, redis-cli) in a Job, as the
// image's user with no capability (baseline).
func toolSecurity() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// nonRootSecurity: a container run as uid without a capability (restricted).
func nonRootSecurity(uid int64) *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To(uid),
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}
