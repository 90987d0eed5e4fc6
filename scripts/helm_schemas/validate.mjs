// Validate prometheus-operator objects (a JSON array on stdin) against the schema the
// @kubernetes-models/prometheus-operator package generates from the operator's CRDs; prints one
// JSON array of problems (strings), empty when all are valid. scripts/helm_chart.py runs it.
import { PrometheusRule } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule";
import { ServiceMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor";

const KINDS = {
  "monitoring.coreos.com/v1/ServiceMonitor": ServiceMonitor,
  "monitoring.coreos.com/v1/PrometheusRule": PrometheusRule,
};
let text = "";
for await (const chunk of process.stdin) text += chunk;
const problems = [];
for (const object of JSON.parse(text)) {
  const where = `${object.kind}/${object.metadata?.name}`;
  const Kind = KINDS[`${object.apiVersion}/${object.kind}`];
  if (!Kind) {
    problems.push(`${where}: no schema here for ${object.apiVersion} ${object.kind}`);
    continue;
  }
  try {
    new Kind(object).validate();
  } catch (error) {
    problems.push(`${where}: ${error.message}`);
  }
}
console.log(JSON.stringify(problems));
