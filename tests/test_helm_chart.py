"""The Helm chart (deploy/helm/mcp-providers, issue 28): ``helm lint --strict`` and the rendered
manifests validated against the Kubernetes schemas for its defaults and every ``ci/*-values.yaml``,
what the manifests say for the deployment to work (docs/deploy.md), and the values it refuses.

Rendering and linting are Helm's own (``helm-python-sdk``, Helm's Go SDK as a library); the
schemas come from ``kubernetes-validate`` and, for the ServiceMonitor, from
``@kubernetes-models/prometheus-operator`` under node (scripts/helm_chart.py). Under ``CI=true`` a
missing one fails (tests/real_parts.py).
"""

from __future__ import annotations

import contextlib
import copy
import http.client
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from real_parts import missing, redis_server, require_tool
from serve_support import free_port

from mcp_providers._serve.transport.ops import pin_sessions
from mcp_providers.config import ClusterSettings

ROOT = Path(__file__).resolve().parent.parent


def _load() -> ModuleType:
    try:
        import helm_python  # noqa: F401
        import kubernetes_validate  # noqa: F401
    except ImportError as exc:
        missing(f"{exc.name} is not installed (uv sync installs helm-python-sdk and kubernetes-validate)")
    spec = importlib.util.spec_from_file_location("helm_chart", ROOT / "scripts" / "helm_chart.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def chart() -> ModuleType:
    return _load()


@pytest.fixture(scope="module")
def node(chart: ModuleType) -> None:
    require_tool("node", "apt-get install -y nodejs")
    require_tool("npm", "apt-get install -y npm")


def _values(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "deploy/helm/mcp-providers/ci" / name).read_text())
    return loaded


def _one(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, f"{len(found)} {kind} objects named {name}: {[o['metadata']['name'] for o in found]}"
    return found[0]


def _container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    container: dict[str, Any] = _one(objects, "StatefulSet")["spec"]["template"]["spec"]["containers"][0]
    return container


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


@pytest.mark.parametrize("values_file", ["default", "cluster-values.yaml", "full-values.yaml", "restart-values.yaml",
                                         "secret-config-values.yaml"])  # fmt: skip
def test_the_chart_lints_and_renders_valid_manifests(chart: ModuleType, node: None, values_file: str) -> None:
    files = {f.name for f in chart.values_files()}
    assert files == {"cluster-values.yaml", "full-values.yaml", "restart-values.yaml", "secret-config-values.yaml"}, (
        "new ci/ file: list it"
    )
    path = None if values_file == "default" else ROOT / "deploy/helm/mcp-providers/ci" / values_file
    assert chart.check(path) == []


def test_the_checks_catch_what_is_wrong(chart: ModuleType, node: None) -> None:
    good = chart.render(_values("cluster-values.yaml"))
    assert chart.validate(good) == []
    bad = copy.deepcopy(good)
    container = _container(bad)
    container["readinesProbe"] = container.pop("readinessProbe")  # a misspelt field
    _one(bad, "Service", "mcp-mcp-providers")["spec"]["ports"][0]["port"] = "eight thousand"
    _one(bad, "ServiceMonitor")["spec"]["endpoints"][0]["port"] = 8000  # a port name, not a number
    _one(bad, "ConfigMap")["data"]["config.toml"] += "\n[server.limits]\nrequests_per_minute = -1\n"
    problems = "\n".join(chart.validate(bad))  # the first problem of each object, for each version
    assert "'readinesProbe' was unexpected" in problems
    assert "spec.ports.0.port: 'eight thousand' is not of type 'integer'" in problems
    assert "Kubernetes 1.25.0" in problems and "Kubernetes 1.37.0" in problems
    assert "ServiceMonitor/mcp-mcp-providers: data/spec/endpoints/0/port must be string" in problems
    assert "ConfigMap/mcp-mcp-providers config.toml:" in problems


def test_lint_fails_a_broken_chart(chart: ModuleType, tmp_path: Path) -> None:
    broken = tmp_path / "mcp-providers"
    shutil.copytree(chart.CHART, broken)
    text = (broken / "Chart.yaml").read_text()
    (broken / "Chart.yaml").write_text(text.replace("version: 0.1.0\n", ""))
    assert chart.lint({}, chart=chart.CHART) == []
    assert any("version is required" in p for p in chart.lint({}, chart=broken))


def test_replicas_share_redis_and_name_themselves_after_their_pod(chart: ModuleType) -> None:
    objects = chart.render(_values("cluster-values.yaml"), name="prod", namespace="mcp")
    statefulset, container = _one(objects, "StatefulSet"), _container(objects)
    assert statefulset["spec"]["replicas"] == 3
    assert statefulset["spec"]["serviceName"] == "prod-mcp-providers-pods"
    assert _one(objects, "Service", "prod-mcp-providers-pods")["spec"]["clusterIP"] == "None"
    env = _env(container)
    assert env["MCP_PROVIDERS_REPLICA"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert env["MCP_PROVIDERS_ADMIN_TOKEN"] == {"secretKeyRef": {"name": "mcp-providers-admin", "key": "token"}}
    assert env["SN_DEV_PASSWORD"] == {"secretKeyRef": {"name": "servicenow-dev", "key": "password"}}
    config = tomllib.loads(_one(objects, "ConfigMap")["data"]["config.toml"])
    assert config["cluster"] == {"redis_url": "redis://redis-master.data.svc:6379/0", "key_prefix": "mcp-prod",
                                 "lease_seconds": 10}  # fmt: skip
    assert config["server"]["admin"] == {"token_env": "MCP_PROVIDERS_ADMIN_TOKEN"}
    assert "password" not in _one(objects, "ConfigMap")["data"]["config.toml"].replace("password_env", "")


def test_a_drain_keeps_all_but_one_replica_serving(chart: ModuleType) -> None:
    objects = chart.render(_values("cluster-values.yaml"), name="prod")
    budget = _one(objects, "PodDisruptionBudget")
    assert budget["spec"]["maxUnavailable"] == 1
    assert budget["spec"]["selector"] == _one(objects, "StatefulSet")["spec"]["selector"]
    assert not [o for o in chart.render({}) if o["kind"] == "PodDisruptionBudget"]  # one replica: none
    assert _one(objects, "StatefulSet")["spec"]["template"]["spec"]["automountServiceAccountToken"] is False


def test_the_config_is_a_mounted_folder_watched_for_changes(chart: ModuleType) -> None:
    objects = chart.render(_values("cluster-values.yaml"), name="prod", namespace="mcp")
    container, pod = _container(objects), _one(objects, "StatefulSet")["spec"]["template"]
    mount = container["volumeMounts"][0]
    assert mount == {"name": "config", "mountPath": "/etc/mcp-providers", "readOnly": True}  # no subPath
    assert _env(container)["MCP_PROVIDERS_CONFIG"] == "/etc/mcp-providers/config.toml"
    config = [v for v in pod["spec"]["volumes"] if v["name"] != "tmp"]  # and the scratch /tmp
    assert config == [{"name": "config", "configMap": {"name": "prod-mcp-providers"}}]
    assert "--watch" in container["args"]
    assert "checksum/config" not in pod["metadata"].get("annotations", {})  # an upgrade rolls nothing


def test_restart_mode_rolls_the_pods_when_the_config_changes(chart: ModuleType) -> None:
    values = _values("restart-values.yaml")
    pod = _one(chart.render(values), "StatefulSet")["spec"]["template"]
    container = pod["spec"]["containers"][0]
    assert "--watch" not in container["args"] and "--stateless" in container["args"]
    checksum = pod["metadata"]["annotations"]["checksum/config"]
    assert len(checksum) == 64 and pod["metadata"]["annotations"]["example.com/team"] == "platform"
    values["config"]["toml"] += "max_read_bytes = 1000000\n"
    changed = _one(chart.render(values), "StatefulSet")["spec"]["template"]["metadata"]["annotations"]
    assert changed["checksum/config"] != checksum
    assert container["envFrom"] == [{"secretRef": {"name": "mcp-providers-env"}}]


def test_probes_resources_hosts_and_the_service_monitor(chart: ModuleType) -> None:
    objects = chart.render(_values("cluster-values.yaml"), name="prod", namespace="mcp")
    container = _container(objects)
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["resources"]["requests"] == {"cpu": "100m", "memory": "256Mi"}
    # a stop fits the grace period: the preStop pause, then at most 10 s after SIGTERM (test_shutdown.py)
    pause = container["lifecycle"]["preStop"]["exec"]["command"]
    assert pause[:2] == ["python", "-c"] and "time.sleep(5)" in pause[2]
    pod = _one(objects, "StatefulSet")["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] >= 5 + 10
    assert container["securityContext"]["readOnlyRootFilesystem"] is True  # /tmp is the pod's own emptyDir
    assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]
    [spread] = pod["topologySpreadConstraints"]
    assert spread["topologyKey"] == "kubernetes.io/hostname" and spread["whenUnsatisfiable"] == "ScheduleAnyway"
    assert spread["labelSelector"]["matchLabels"] == _one(objects, "StatefulSet")["spec"]["selector"]["matchLabels"]
    args = container["args"]
    hosts = [args[i + 1] for i, a in enumerate(args) if a == "--allow-host"]
    assert hosts == ["prod-mcp-providers", "prod-mcp-providers.mcp.svc", "prod-mcp-providers.mcp.svc.cluster.local",
                     "mcp.example.com"]  # fmt: skip
    monitor = _one(objects, "ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    wanted = monitor["spec"]["selector"]["matchLabels"]
    services = [o for o in objects if o["kind"] == "Service" and wanted.items() <= o["metadata"]["labels"].items()]
    assert [s["metadata"]["name"] for s in services] == ["prod-mcp-providers"]  # not scraped twice via -pods
    assert monitor["spec"]["endpoints"][0]["port"] in {p["name"] for p in services[0]["spec"]["ports"]}
    assert monitor["spec"]["endpoints"][0]["path"] == "/metrics"
    assert not [o for o in chart.render({}) if o["kind"] == "ServiceMonitor"]  # off by default


def test_a_long_release_name_still_gives_pods_a_replica_name_the_server_takes(chart: ModuleType) -> None:
    objects = chart.render({}, name="a-very-long-release-name-for-the-docs-team")
    name = _one(objects, "StatefulSet")["metadata"]["name"]
    assert len(name) <= 28
    pin_sessions(object(), replica=f"{name}-999")  # raises ValueError past 32 characters
    with pytest.raises(ValueError, match="1-32 letters"):
        pin_sessions(object(), replica=f"{name}-999-and-more-than-thirty-two")


def test_the_whole_config_can_come_from_a_secret(chart: ModuleType) -> None:
    objects = chart.render(_values("secret-config-values.yaml"))
    assert not [o for o in objects if o["kind"] == "ConfigMap"]
    volumes = _one(objects, "StatefulSet")["spec"]["template"]["spec"]["volumes"]
    secret = {"secretName": "mcp-providers-config", "items": [{"key": "config.toml", "path": "config.toml"}]}
    assert [v for v in volumes if v["name"] != "tmp"] == [{"name": "config", "secret": secret}]


REFUSED = [
    # by the templates: what needs more than one value to see
    ({"replicaCount": 3}, "replicaCount 3 needs Redis to share live state: set redis.url and redis.keyPrefix"),
    ({"redis": {"url": "redis://r:6379/0"}}, "redis.keyPrefix is required with redis.url"),
    ({"redis": {"url": "redis://r:6379/0", "keyPrefix": "p"}, "config": {"toml": "[cluster]\nkey_prefix = 'x'\n"}},
     "config.toml has a [cluster] table too"),
    ({"redis": {"url": "http://r:6379", "keyPrefix": "p"}}, 'redis.url "http://r:6379" must start with redis://'),
    ({"redis": {"url": "redis://u:secret@r:6379/0", "keyPrefix": "p"}}, "redis.url carries credentials"),
    ({"redis": {"url": "http://u:secret@r", "keyPrefix": "p"}}, "redis.url carries credentials"),
    # by values.schema.json: a misspelt key, a wrong type or value
    ({"replicas": 3}, "additional properties 'replicas' not allowed"),
    ({"redis": {"keyprefix": "p"}}, "at '/redis': additional properties 'keyprefix' not allowed"),
    ({"config": {"reload": "sometimes"}}, "at '/config/reload': value must be one of 'watch', 'restart'"),
    ({"secretEnv": {"SN_PASSWORD": "hunter2"}}, "at '/secretEnv/SN_PASSWORD': got string, want object"),
    ({"secretEnv": {"SN_PASSWORD": {"secret": "sn"}}}, "at '/secretEnv/SN_PASSWORD': missing property 'key'"),
    ({"replicaCount": "three"}, "at '/replicaCount': got string, want integer"),
    # issue 42 (build 11): the Redis Secret, autoscaling and the ingress
    ({"redis": {"url": "redis://r:6379/0", "keyPrefix": "p", "passwordKey": "pw"}},
     "redis.passwordKey and redis.urlKey name keys of redis.existingSecret: set redis.existingSecret"),
    ({"redis": {"url": "redis://r:6379/0", "keyPrefix": "p", "existingSecret": "redis"}},
     "name the key holding Redis's password (redis.passwordKey) or its whole URL (redis.urlKey)"),
    ({"redis": {"url": "redis://r:6379/0", "keyPrefix": "p", "existingSecret": "redis", "urlKey": "url"}},
     "redis.url and redis.urlKey are both set"),
    ({"redis": {"existingSecret": "redis", "urlKey": "url"}}, "redis.keyPrefix is required"),
    ({"autoscaling": {"enabled": True}}, "replicaCount 6 needs Redis to share live state"),
    ({"autoscaling": {"enabled": True, "minReplicas": 4, "maxReplicas": 3}, "redis": {"url": "redis://r:6379/0",
      "keyPrefix": "p"}}, "autoscaling.minReplicas 4 is above autoscaling.maxReplicas 3"),
    ({"ingress": {"enabled": True}}, "ingress.enabled needs ingress.hosts"),
    ({"ingress": {"path": "mcp"}}, "at '/ingress/path'"),
]  # fmt: skip


@pytest.mark.parametrize(("values", "message"), REFUSED)
def test_values_that_cannot_work_are_refused_saying_what_to_set(
    chart: ModuleType, values: dict[str, Any], message: str
) -> None:
    with pytest.raises(chart.ChartError) as refused:
        chart.render(values)
    assert message in str(refused.value)
    assert "secret@" not in str(refused.value) and "hunter2" not in str(refused.value)


def test_everything_on_autoscales_routes_mcp_only_fences_the_pods_and_keeps_the_redis_password_secret(
    chart: ModuleType,
) -> None:
    """Issue 42 (build 11): HPA, Ingress, NetworkPolicy, ServiceAccount, the Redis password from a
    Secret (the config stays a ConfigMap, with no password), and a startup probe with room."""
    objects = chart.render(_values("full-values.yaml"), name="prod", namespace="mcp")
    statefulset, container = _one(objects, "StatefulSet"), _container(objects)
    pod = statefulset["spec"]["template"]["spec"]
    assert "replicas" not in statefulset["spec"]  # the HPA's to set
    hpa = _one(objects, "HorizontalPodAutoscaler")["spec"]
    assert hpa["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "prod-mcp-providers"}
    assert (hpa["minReplicas"], hpa["maxReplicas"]) == (2, 5)
    assert hpa["metrics"][0]["resource"]["target"] == {"type": "Utilization", "averageUtilization": 70}
    assert _one(objects, "PodDisruptionBudget")["spec"]["maxUnavailable"] == 1  # up to 5 replicas: one at a time
    text = _one(objects, "ConfigMap")["data"]["config.toml"]
    cluster = tomllib.loads(text)["cluster"]
    assert cluster["password_env"] == "MCP_PROVIDERS_REDIS_PASSWORD" and "redis-password" not in text
    env = _env(container)
    assert env["MCP_PROVIDERS_REDIS_PASSWORD"] == {
        "secretKeyRef": {"name": "redis-credentials", "key": "redis-password"}
    }
    settings = ClusterSettings.model_validate(cluster)  # the server takes what the chart writes
    assert settings.connection_url({"MCP_PROVIDERS_REDIS_PASSWORD": "s3"}) == "redis://:s3@redis-master.data.svc:6379/0"
    [rule] = _one(objects, "Ingress")["spec"]["rules"]
    assert rule["host"] == "mcp.example.com"
    assert [(p["path"], p["pathType"]) for p in rule["http"]["paths"]] == [
        ("/mcp", "Exact"), ("/.well-known/oauth-protected-resource", "Prefix")]  # fmt: skip
    args = container["args"]
    assert "mcp.example.com" in [args[i + 1] for i, a in enumerate(args) if a == "--allow-host"]
    [allowed] = _one(objects, "NetworkPolicy")["spec"]["ingress"]
    assert allowed["ports"] == [{"port": "http", "protocol": "TCP"}]
    assert allowed["from"][0] == {"podSelector": {"matchLabels": statefulset["spec"]["selector"]["matchLabels"]}}
    assert len(allowed["from"]) == 3  # the release's pods, the ingress controller's and Prometheus's namespaces
    account = _one(objects, "ServiceAccount")
    assert pod["serviceAccountName"] == account["metadata"]["name"] and account["automountServiceAccountToken"] is False
    startup = container["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 120  # start-up took 11-13 s at 100m CPU
    defaults = {o["kind"] for o in chart.render({})}
    assert not defaults & {"HorizontalPodAutoscaler", "Ingress", "NetworkPolicy"}  # off by default
    whole = chart.render({"redis": {"keyPrefix": "p", "existingSecret": "redis", "urlKey": "url"}, "replicaCount": 2})
    assert tomllib.loads(_one(whole, "ConfigMap")["data"]["config.toml"])["cluster"] == {
        "redis_url_env": "MCP_PROVIDERS_REDIS_URL", "key_prefix": "p", "lease_seconds": 10}  # fmt: skip
    assert _env(_container(whole))["MCP_PROVIDERS_REDIS_URL"] == {"secretKeyRef": {"name": "redis", "key": "url"}}


def test_one_replica_or_a_cluster_table_needs_no_redis_url(chart: ModuleType) -> None:
    assert _one(chart.render({}), "StatefulSet")["spec"]["replicas"] == 1
    own = "[cluster]\nredis_url = 'redis://r:6379/0'\nkey_prefix = 'own'\n"
    objects = chart.render({"replicaCount": 2, "config": {"toml": own}})
    assert tomllib.loads(_one(objects, "ConfigMap")["data"]["config.toml"])["cluster"]["key_prefix"] == "own"


ADMIN_TOKEN = "a" * 40
POD_CONFIG = '[server]\nname = "mcp-providers"\n\n[server.admin]\ntoken_env = "MCP_PROVIDERS_ADMIN_TOKEN"\n'


def _request(port: int, method: str, path: str, host: str, body: bytes | None = None,
             headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:  # fmt: skip
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request(method, path, body=body, headers={"Host": host, **(headers or {})})
        answer = connection.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
    finally:
        connection.close()


def test_the_pod_as_rendered_serves_with_its_command_env_and_config(chart: ModuleType, tmp_path: Path) -> None:
    """The container's command, arguments, environment and config file, run as the kubelet would
    (the pod's name from the downward API, the Secret's value in its variable), on a real Redis."""
    with redis_server() as (redis_url, _):
        values = _values("cluster-values.yaml")
        values["config"]["toml"] = POD_CONFIG  # no ServiceNow instance: nothing may call out
        values["redis"]["url"] = redis_url
        objects = chart.render(values, name="prod", namespace="mcp")
        container = _container(objects)
        config = tmp_path / "config.toml"
        config.write_text(_one(objects, "ConfigMap")["data"]["config.toml"])
        env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
        env |= {"MCP_PROVIDERS_CONFIG": str(config), "MCP_PROVIDERS_REPLICA": "prod-mcp-providers-2",
                "MCP_PROVIDERS_ADMIN_TOKEN": ADMIN_TOKEN, "SN_DEV_PASSWORD": "unused"}  # fmt: skip
        assert set(_env(container)) == {"MCP_PROVIDERS_CONFIG", "MCP_PROVIDERS_REPLICA", "MCP_PROVIDERS_ADMIN_TOKEN",
                                        "SN_DEV_PASSWORD"}  # fmt: skip
        port = free_port()
        command = [a.replace(":8000", f":{port}") for a in container["command"]]
        assert command[:2] == ["mcp-providers", "serve"]
        argv = [sys.executable, "-m", "mcp_providers", *command[1:], *container["args"]]
        log = tmp_path / "serve.log"
        with log.open("wb") as stderr:
            proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr)
        try:
            _served_as_the_chart_says(port, proc, log)
        finally:
            proc.terminate()
            proc.wait(timeout=15)


def _served_as_the_chart_says(port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    service = "prod-mcp-providers.mcp.svc"
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, log.read_text()
        with contextlib.suppress(OSError):
            status, _, body = _request(port, "GET", "/readyz", service)
            if status == 200:
                break
        assert time.monotonic() < deadline, f"not ready in 60 s: {log.read_text()}"
        time.sleep(0.1)
    assert json.loads(body)["status"] == "ready"  # with [cluster]: Redis answers
    for probe in ("/healthz", "/readyz"):  # the kubelet's probes send Host: <pod IP>:<port>
        assert _request(port, "GET", probe, "10.1.2.3:8000")[0] == 200
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    initialize = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}).encode()
    mcp_headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    status, headers, _ = _request(port, "POST", "/mcp", service, initialize, mcp_headers)
    assert status == 200 and headers["mcp-session-id"].startswith("prod-mcp-providers-2.")  # pinned to the pod
    assert _request(port, "POST", "/mcp", "mcp.example.com", initialize, mcp_headers)[0] == 200  # allowHosts
    assert _request(port, "POST", "/mcp", "elsewhere.example", initialize, mcp_headers)[0] == 421
    status, _, body = _request(port, "POST", "/admin/reload", service, b"", {"authorization": f"Bearer {ADMIN_TOKEN}"})
    assert status == 200, body  # the token from the Secret's variable ([server.admin] token_env)
    assert _request(port, "POST", "/admin/reload", service, b"", {"authorization": "Bearer " + "b" * 40})[0] == 403


def test_the_alert_rules_load_in_prometheus_and_name_what_on_call_watches(chart: ModuleType, tmp_path: Path) -> None:
    """Issue 42 (build 6): the PrometheusRule's groups are a rules file Prometheus's own ``promtool``
    accepts, with an alert for errors, a replica down, failed reloads, the bus down and audit drops."""
    promtool = require_tool("promtool", "apt-get install -y prometheus")
    objects = chart.render(_values("cluster-values.yaml"), name="prod", namespace="mcp")
    rule = _one(objects, "PrometheusRule")
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    alerts = {r["alert"]: r for g in rule["spec"]["groups"] for r in g["rules"]}
    assert set(alerts) == {"McpProvidersErrorRate", "McpProvidersReplicaDown", "McpProvidersReloadFailed",
                           "McpProvidersClusterBusDown", "McpProvidersAuditDropped"}  # fmt: skip
    assert all('job="prod-mcp-providers"' in r["expr"] for r in alerts.values())  # the ServiceMonitor's job
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    checked = subprocess.run([promtool, "check", "rules", str(rules)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert not [o for o in chart.render(_values("restart-values.yaml")) if o["kind"] == "PrometheusRule"]  # off
