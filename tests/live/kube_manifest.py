"""deploy/kubernetes/snowflaked.yaml and cluster-create.yaml made playable by
`podman kube play` (podman 4.3, Debian 12's), changed no more than that
needs, and the Secrets the manifest expects beside it. What podman 4.3 does
not do as Kubernetes does, and what is changed for it, is said where it is
changed.

Debian's python3 and python3-yaml only.
"""

import copy
import json
import os

import yaml

from livetest import check

IMAGE_LINE = "snowflaked:0.5.0"  # the image the manifest names, which a user replaces too
ZOOKEEPER_IMAGE_LINE = "zookeeper:3.8"  # zookeeper.yaml's: the official image
CONFIG_KEY = "snowflaked.json"  # the ConfigMap's key: the file the image reads
REPLICAS = 3  # each Deployment's, in the manifest
ADVERTISE = "SNOWFLAKED_ADVERTISE"
TLS_MOUNT = "/run/secrets/snowflaked-tls"  # docs/operations.md's, "cert-manager on Kubernetes"


class PlayedPod:
    """A pod the kubelet would run for a Deployment: its name, the address
    Kubernetes would give it, and the Deployment it is of."""

    def __init__(self, name, ip, deployment):
        self.name, self.ip, self.deployment = name, ip, deployment


class Played:
    """The manifest's documents as they are played, and what the test needs
    to know of them: the ConfigMap's name and the config it holds, the Job's
    name, the Secret the pods mount and the key of it the config names, the
    pods (in the order they take the addresses given to `kube play --ip`)."""

    def __init__(self, docs, config_map_name, config, job_name, secret_name, secret_key, pods,
                 claim_name, copies):
        self.docs, self.config_map_name, self.config = docs, config_map_name, config
        self.job_name, self.secret_name, self.secret_key = job_name, secret_name, secret_key
        self.pods, self.claim_name = pods, claim_name
        # {a ConfigMap's or Secret's name: the names of its copies, a pod each}
        self.copies = copies

    def copies_of(self, name):
        """The podman secrets (or volumes) that stand for the Secret or
        ConfigMap `name`: one for each pod that mounts it."""
        return self.copies.get(name, [name])

    def yaml(self):
        return yaml.safe_dump_all(self.docs, sort_keys=False)

    def ip_flags(self):
        return [flag for pod in self.pods for flag in ("--ip", pod.ip)]


def _of_kind(docs, kind):
    return [d for d in docs if d.get("kind") == kind]


def _one(docs, kind):
    found = _of_kind(docs, kind)
    check(len(found) == 1, f"the manifest's {kind}s: {[d.get('metadata', {}).get('name') for d in found]}")
    return found[0]


def _auth_volume(spec, auth_file):
    """The secret volume of a pod spec that holds zookeeper.auth_file."""
    mounted = {m["name"]: m["mountPath"] for c in spec["containers"] for m in c.get("volumeMounts", [])}
    volumes = [v for v in spec.get("volumes", []) if "secret" in v and
               mounted.get(v["name"]) == os.path.dirname(auth_file)]
    check(len(volumes) == 1, f"secret volumes holding zookeeper.auth_file {auth_file}: {volumes}")
    # 0440: the image's group 0 reads it (docs/operations.md, the Secret).
    check(volumes[0]["secret"].get("defaultMode") == 0o440,
          f"the Secret's defaultMode is {volumes[0]['secret'].get('defaultMode')}, not 0440")
    return volumes[0]


def _with_pod_address(container, ip):
    """What the kubelet puts in the environment: POD_IP from the downward API
    (status.podIP), which podman 4.3 does not know ("not valid or not
    supported"), and $(POD_IP) expanded in SNOWFLAKED_ADVERTISE, which 4.3
    leaves as it is. The values are the kubelet's; the address is the one the
    test gives the pod (`kube play --ip`)."""
    env = container.get("env", [])
    pod_ip = [e for e in env if e["name"] == "POD_IP"]
    check(len(pod_ip) == 1 and pod_ip[0].get("valueFrom") == {"fieldRef": {"fieldPath": "status.podIP"}},
          f"POD_IP is not the downward API's status.podIP: {pod_ip}")
    advertise = [e for e in env if e["name"] == ADVERTISE]
    check(len(advertise) == 1 and "$(POD_IP)" in advertise[0].get("value", ""),
          f"{ADVERTISE} does not name $(POD_IP): {advertise}")
    del pod_ip[0]["valueFrom"]
    pod_ip[0]["value"] = ip
    advertise[0]["value"] = advertise[0]["value"].replace("$(POD_IP)", ip)


def _with_tls(spec, tls_secret):
    """The secret volume docs/operations.md's TLS section mounts (cert-manager's
    Secret) in every pod that reads the config (the Job's too: the config
    names the files), and HTTPS probes where there are probes."""
    spec["volumes"].append({"name": "tls", "secret": {"secretName": tls_secret, "defaultMode": 0o440,
                                                      "optional": False}})  # as below, for 4.3
    for container in spec["containers"]:
        container["volumeMounts"].append({"name": "tls", "mountPath": TLS_MOUNT, "readOnly": True})
        for probe in ("readinessProbe", "livenessProbe"):
            if probe in container:
                container[probe]["httpGet"]["scheme"] = "HTTPS"


def _pods_of(deployment, ips, tls_secret):
    """A Deployment's replicas as single-replica Deployments, a pod each.
    podman 4.3 plays an emptyDir as one volume named after it, which every
    pod of the Deployment then shares (Kubernetes gives each pod its own),
    and a daemon refuses a state directory another one holds: so each has
    its own emptyDir, named after its pod. podman 4.3 also publishes each
    containerPort on the host's port of the same number, which Kubernetes
    does not (there it only names the port): replicas would contend for the
    host's 8080. The list goes; the probes and Services name the ports by
    number or name, and nothing played reads the names."""
    check(deployment["spec"].get("replicas") == REPLICAS,
          f"{deployment['metadata']['name']}'s replicas moved: {deployment['spec'].get('replicas')}")
    out = []
    for i, ip in enumerate(ips):
        d = copy.deepcopy(deployment)
        name = f"{deployment['metadata']['name']}-{i}"
        d["metadata"]["name"] = name
        d["spec"]["replicas"] = 1
        spec = d["spec"]["template"]["spec"]
        state = [v for v in spec["volumes"] if "emptyDir" in v]
        check(len(state) == 1, f"{name}: emptyDir volumes {state}")
        for container in spec["containers"]:
            for mount in container["volumeMounts"]:
                if mount["name"] == state[0]["name"]:
                    mount["name"] = f"{name}-state"
            check([p["containerPort"] for p in container.get("ports", [])] == [8080, 9090],
                  f"{name}'s ports: {container.get('ports')}")
            del container["ports"]
            _with_pod_address(container, ip)
        state[0]["name"] = f"{name}-state"
        if tls_secret:
            _with_tls(spec, tls_secret)
        out.append((d, PlayedPod(f"{name}-pod-0", ip, deployment["metadata"]["name"])))
    return out


def playable(text, job_text, image, service, ips, tls=None, claim_made=False, host_aliases=None):
    """The manifest with the lines a user edits too (the image; the
    ConfigMap's service) and what podman 4.3 needs. The ConfigMap's
    zookeeper.hosts stay: zookeeper.yaml's names, which `host_aliases`
    (zookeeper_playable's) resolve.
    `ips`: for each Deployment's name, the addresses of the pods played of
    it (so how many). `tls`: the config's TLS keys (docs/operations.md's
    TLS section) and the name of the Secret with the files, or None.
    `claim_made`: the Job's claim is there from an earlier play."""
    docs = [d for d in yaml.safe_load_all(text) if d] + [d for d in yaml.safe_load_all(job_text) if d]
    config_map, job, claim = (_one(docs, k) for k in ("ConfigMap", "Job", "PersistentVolumeClaim"))
    config = json.loads(config_map["data"][CONFIG_KEY])
    config["service"] = service
    if tls:
        config["http"].update(tls["keys"])
    config_map["data"][CONFIG_KEY] = json.dumps(config, indent=2) + "\n"
    deployments = _of_kind(docs, "Deployment")
    check(sorted(d["metadata"]["name"] for d in deployments) == sorted(ips),
          f"the manifest's Deployments: {[d['metadata']['name'] for d in deployments]}")

    job_spec = job["spec"]["template"]["spec"]
    if tls:
        _with_tls(job_spec, tls["secret"])
    pod_specs = [job_spec] + [d["spec"]["template"]["spec"] for d in deployments]
    secrets = set()
    for spec in pod_specs:
        for container in spec["containers"]:
            check(container["image"] == IMAGE_LINE, f"the manifest's image is {container['image']}")
            container["image"] = image
        if host_aliases:
            spec["hostAliases"] = host_aliases
        volume = _auth_volume(spec, config["zookeeper"].get("auth_file", ""))
        secrets.add(volume["secret"]["secretName"])
        # podman 4.3 dereferences `optional` of a secret volume without
        # looking (a nil pointer: it panics); false is Kubernetes' default.
        volume["secret"].setdefault("optional", False)
    check(len(secrets) == 1, f"the pods mount the Secrets {secrets}")
    # The Job's record is the claim's, where the config's state_dir is.
    record = [v for v in job_spec["volumes"] if "persistentVolumeClaim" in v]
    check(len(record) == 1 and record[0]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
          and {"name": record[0]["name"], "mountPath": config["coordinator"]["state_dir"]}.items()
          <= job_spec["containers"][0]["volumeMounts"][0].items(),
          f"the Job keeps no record on its claim at {config['coordinator']['state_dir']}: {job_spec}")

    played, pods = [], []
    for d in docs:
        # podman 4.3 refuses to play a claim whose volume exists ("volume
        # already exists"); Kubernetes leaves a claim that exists as it is.
        if d is job or (d is claim and claim_made):
            continue
        if d in deployments:
            for clone, pod in _pods_of(d, ips[d["metadata"]["name"]], tls and tls["secret"]):
                played.append(clone)
                pods.append(pod)
        else:
            played.append(d)
    # podman 4.3 plays no Job: the Job's pod is played as a Pod, as the Job's
    # controller would run it (once, until it exits 0), last (no address of
    # its own: `--ip` gives the others theirs in order).
    played.append({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": job["metadata"]["name"], "labels": job["metadata"]["labels"]},
                   "spec": job_spec})
    played, copies = _volumes_a_pod_each(played)
    return Played(played, config_map["metadata"]["name"], config, job["metadata"]["name"],
                  secrets.pop(), os.path.basename(config["zookeeper"]["auth_file"]), pods,
                  claim["metadata"]["name"], copies)


def _volumes_a_pod_each(docs):
    """Each pod's ConfigMap and Secret volumes as copies of their own.
    podman 4.3 plays such a volume as one named volume, shared, whose files
    it writes again (truncated, then written) as it plays each pod that
    mounts it: a daemon reading its config or its ZooKeeper identity while
    the next pod is played can find the file empty (it happened: exit 2,
    "zookeeper.auth_file ... must hold user:password"). Kubernetes gives
    each pod a volume of its own, written before its containers start, as
    these copies are. Returns the documents (a ConfigMap's copies in its
    place) and {name: its copies' names}."""
    copies = {}
    config_maps = {d["metadata"]["name"]: d for d in _of_kind(docs, "ConfigMap")}
    made = []
    for d in docs:
        if d.get("kind") == "Deployment":
            spec, pod = d["spec"]["template"]["spec"], d["metadata"]["name"]
        elif d.get("kind") == "Pod":
            spec, pod = d["spec"], d["metadata"]["name"]
        else:
            continue
        for volume in spec.get("volumes", []):
            if "configMap" in volume:
                name = volume["configMap"]["name"]
                copy_name = f"{name}-{pod}"
                clone = copy.deepcopy(config_maps[name])
                clone["metadata"]["name"] = copy_name
                made.append(clone)
                volume["configMap"]["name"] = copy_name
                copies.setdefault(name, []).append(copy_name)
            elif "secret" in volume:
                name = volume["secret"]["secretName"]
                volume["secret"]["secretName"] = f"{name}-{pod}"
                copies.setdefault(name, []).append(f"{name}-{pod}")
    out = []
    for d in docs:
        if d.get("kind") == "ConfigMap" and d["metadata"]["name"] in copies:
            out.extend(made_d for made_d in made
                       if made_d["metadata"]["name"] in copies[d["metadata"]["name"]])
        else:
            out.append(d)
    return out, copies


class PlayedZooKeeper:
    """zookeeper.yaml as played: the documents, the pods' names and
    addresses, the claims' names, and the host aliases that resolve the
    headless Service's names."""

    def __init__(self, docs, pods, claims, host_aliases):
        self.docs, self.pods, self.claims, self.host_aliases = docs, pods, claims, host_aliases

    def yaml(self):
        return yaml.safe_dump_all(self.docs, sort_keys=False)

    def ip_flags(self):
        return [flag for pod in self.pods for flag in ("--ip", pod.ip)]


def zookeeper_playable(text, image, ips):
    """zookeeper.yaml for podman 4.3, which plays no StatefulSet and no
    Service: the StatefulSet's pods as the controller makes them, a Pod
    each (zookeeper-N, its hostname too) with claims of its own named as
    the controller names them (data-zookeeper-N), made as claims first.
    The headless Service's names (zookeeper-N.zookeeper), which cluster DNS
    would answer, become host aliases of every pod played, these and
    snowflaked's. The image is the stand-in's; the containerPorts go, as
    for snowflaked (three servers would contend for the host's 2181)."""
    docs = [d for d in yaml.safe_load_all(text) if d]
    sts, service = _one(docs, "StatefulSet"), _one(docs, "Service")
    check(service["spec"].get("clusterIP") == "None" and service["spec"].get("publishNotReadyAddresses")
          and sts["spec"]["serviceName"] == service["metadata"]["name"],
          f"zookeeper.yaml's Service is not the StatefulSet's headless one: {service['spec']}")
    name, domain = sts["metadata"]["name"], service["metadata"]["name"]
    check(sts["spec"]["replicas"] == len(ips), f"zookeeper.yaml's replicas: {sts['spec']['replicas']}")
    aliases = [{"ip": ip, "hostnames": [f"{name}-{i}.{domain}"]} for i, ip in enumerate(ips)]
    played, pods, claims = [], [], []
    for i, ip in enumerate(ips):
        pod_name = f"{name}-{i}"
        spec = copy.deepcopy(sts["spec"]["template"]["spec"])
        spec["hostname"] = pod_name
        spec["hostAliases"] = aliases
        spec["volumes"] = []
        for template in sts["spec"]["volumeClaimTemplates"]:
            claim = f"{template['metadata']['name']}-{pod_name}"
            played.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                           "metadata": {"name": claim}, "spec": template["spec"]})
            spec["volumes"].append({"name": template["metadata"]["name"],
                                    "persistentVolumeClaim": {"claimName": claim}})
            claims.append(claim)
        for container in spec["containers"]:
            check(container["image"] == ZOOKEEPER_IMAGE_LINE, f"zookeeper.yaml's image is {container['image']}")
            container["image"] = image
            del container["ports"]
        played.append({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": pod_name, "labels": sts["spec"]["template"]["metadata"]["labels"]},
                       "spec": spec})
        pods.append(PlayedPod(pod_name, ip, name))
    return PlayedZooKeeper(played, pods, claims, aliases)


def secret_for_podman(name, data):
    """The Secret `kubectl create secret generic NAME --from-literal=KEY=VALUE`
    (or cert-manager) makes, as a document for `podman secret create`, in the
    form podman 4.3 reads for a secret volume. A Secret played with the
    manifest would become the same podman secret, but 4.3 then writes the
    volume's files with `data` still base64-encoded, and without
    `stringData` at all: so each value goes in `data` as it is, which 4.3
    writes out as it is."""
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
                           "type": "Opaque", "data": data}, sort_keys=False)
