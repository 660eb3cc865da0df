package actual

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// benchPage is a page of n Deployments as the API server writes them for
// resyncd's children: labels, an owner, managedFields of two managers, a
// pod template with probes and resources, and a status.
func benchPage(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{"resourceVersion":"123","continue":"abc"},"items":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strings.NewReplacer("{i}", strconv.Itoa(i), "{ns}", fmt.Sprintf("%03d", i/100),
			"{uid}", fmt.Sprintf("%012d", i), "{rv}", strconv.Itoa(1000+i)).Replace(benchDeployment))
	}
	b.WriteString(`]}`)
	if !json.Valid(b.Bytes()) {
		panic("benchPage: not JSON")
	}
	return b.Bytes()
}

// benchDeployment is one Deployment of benchPage, {i} its number.
const benchDeployment = `{"metadata":{"name":"web-{i}","namespace":"bench-{ns}","uid":"0b7e1f3a-2c55-4a7e-9d1b-{uid}","resourceVersion":"{rv}","generation":1,"creationTimestamp":"2026-12-02T03:00:00Z",
"labels":{"app.kubernetes.io/managed-by":"resyncd","app.kubernetes.io/name":"web-{i}","resyncd.io/parent":"web-{i}","resyncd.io/parent-kind":"HttpService.resyncd.io"},
"annotations":{"deployment.kubernetes.io/revision":"1","resyncd.io/created":"true"},
"ownerReferences":[{"apiVersion":"resyncd.io/v1alpha1","kind":"HttpService","name":"web-{i}","uid":"5d1c2b3a-2c55-4a7e-9d1b-{uid}","controller":true,"blockOwnerDeletion":true}],
"managedFields":[{"manager":"resyncd","operation":"Apply","apiVersion":"apps/v1","time":"2026-12-02T03:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{"f:resyncd.io/created":{}},"f:labels":{"f:app.kubernetes.io/managed-by":{},"f:app.kubernetes.io/name":{},"f:resyncd.io/parent":{},"f:resyncd.io/parent-kind":{}},"f:ownerReferences":{"k:{\"uid\":\"5d1c\"}":{}}},"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app.kubernetes.io/name":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:env":{"k:{\"name\":\"A\"}":{".":{},"f:name":{},"f:value":{}},"k:{\"name\":\"B\"}":{".":{},"f:name":{},"f:value":{}}},"f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:name":{}}},"f:readinessProbe":{"f:httpGet":{"f:path":{},"f:port":{}}},"f:resources":{"f:limits":{"f:cpu":{},"f:memory":{}},"f:requests":{"f:cpu":{},"f:memory":{}}}}}}}}}},
{"manager":"kube-controller-manager","operation":"Update","apiVersion":"apps/v1","time":"2026-12-02T03:00:01Z","fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:conditions":{},"f:observedGeneration":{},"f:replicas":{}}},"subresource":"status"}]},
"spec":{"replicas":2,"selector":{"matchLabels":{"app.kubernetes.io/name":"web-{i}"}},"template":{"metadata":{"labels":{"app.kubernetes.io/name":"web-{i}"}},"spec":{"containers":[{"name":"web","image":"registry.example/web:1.2.3","ports":[{"name":"http","containerPort":8080,"protocol":"TCP"}],
"env":[{"name":"A","value":"1"},{"name":"B","value":"two"}],"resources":{"limits":{"cpu":"500m","memory":"256Mi"},"requests":{"cpu":"100m","memory":"128Mi"}},
"readinessProbe":{"httpGet":{"path":"/healthz","port":8080,"scheme":"HTTP"},"timeoutSeconds":1,"periodSeconds":10,"successThreshold":1,"failureThreshold":3},
"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","securityContext":{},"schedulerName":"default-scheduler"}},
"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":"25%","maxSurge":"25%"}},"revisionHistoryLimit":10,"progressDeadlineSeconds":600},
"status":{"observedGeneration":1,"replicas":2,"conditions":[{"type":"Available","status":"True","lastUpdateTime":"2026-12-02T03:00:01Z","lastTransitionTime":"2026-12-02T03:00:01Z","reason":"MinimumReplicasAvailable","message":"Deployment has minimum availability."}]}}`

// BenchmarkDecodeList decodes a page of 500 Deployments.
func BenchmarkDecodeList(b *testing.B) {
	page := benchPage(500)
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		items := 0
		if _, err := decodeList(bytes.NewReader(page), func(*unstructured.Unstructured) error { items++; return nil }); err != nil {
			b.Fatal(err)
		}
		if items != 500 {
			b.Fatalf("%d items", items)
		}
	}
}
