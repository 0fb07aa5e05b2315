// Package deploy holds no code: its tests check the deployment files beside
// them (alerts.yaml, prometheusrule.yaml, dashboard.json, kubernetes.yaml)
// against Prometheus' own rule and PromQL parsers, the Prometheus
// Operator's and Kubernetes' API types, and the metrics a running evspool
// exports. It is a module of its own so that evspool's module does not
// depend on Prometheus and Kubernetes. Run: cd deploy && go test ./...
package deploy
