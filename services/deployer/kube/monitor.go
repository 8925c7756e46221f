package kube

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Monitoring on Kubernetes (docs/monitoring.md, "Kubernetes"). cAdvisor,
// through the kubelet, measures every container, but labels its series only
// with namespace, pod and container; the catalog's PromQL selects by
// experiment, configuration and component. The deployer knows which pod is
// what, so it exports that as an info series,
//
//	benchq_pod_info{namespace, pod, experiment, configuration, dbms, component, phase} 1
//
// and deploy/k8s/prometheus.yaml's recording rules join cAdvisor's series
// with it, under cAdvisor's own names: the same PromQL then serves both
// backends. A cluster's workers are component "sut", as on the local
// backend, where every node of a cluster is part of the SUT.

// podInfoDesc is the info series of one benchq pod.
var podInfoDesc = prometheus.NewDesc("benchq_pod_info",
	"A pod of a benchq experiment, with the labels the catalog's queries select by (value 1).",
	[]string{"namespace", "pod", labelExperiment, labelConfiguration, labelDBMS, labelComponent, labelPhase}, nil)

// Collectors are the backend's collectors for the deployer's /metrics.
func (k *Kube) Collectors() []prometheus.Collector { return []prometheus.Collector{podInfo{k}} }

// podInfo lists the namespace's benchq pods at each scrape: one List of a
// label selector, bounded by a short timeout so a slow API server costs
// the scrape its series, not the scrape itself.
type podInfo struct{ k *Kube }

func (p podInfo) Describe(ch chan<- *prometheus.Desc) { ch <- podInfoDesc }

func (p podInfo) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	pods, err := p.k.Client.CoreV1().Pods(p.k.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labelApp + "=" + appName})
	if err != nil {
		p.k.log().Warn("benchq_pod_info: list pods", "err", err)
		return
	}
	for _, pod := range pods.Items {
		l := pod.Labels
		if l[labelExperiment] == "" || l[labelComponent] == "" {
			continue
		}
		ch <- prometheus.MustNewConstMetric(podInfoDesc, prometheus.GaugeValue, 1,
			pod.Namespace, pod.Name, l[labelExperiment], l[labelConfiguration], l[labelDBMS], monitoredComponent(l[labelComponent]), l[labelPhase])
	}
}

// monitoredComponent is the component a pod's series are counted under.
func monitoredComponent(c string) string {
	if c == componentWorker {
		return componentSUT
	}
	return c
}
