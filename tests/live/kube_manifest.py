"""deploy/kubernetes/snowflaked.yaml made playable by `podman kube play`
(podman 4.3, Debian 12's), changed no more than that needs, and the Secret
the manifest expects beside it. What podman 4.3 does not do as Kubernetes
does, and what is changed for it, is said where it is changed.

Debian's python3 and python3-yaml only.
"""

import json
import os

import yaml

from livetest import check

IMAGE_LINE = "snowflaked:0.5.0"  # the image the manifest names, which a user replaces too
CONFIG_KEY = "snowflaked.json"  # the ConfigMap's key: the file the image reads


class Played:
    """The manifest's documents as they are played, and what the test needs
    to know of them: the ConfigMap's name and the config it holds, the Job's
    name, the Secret the pods mount and the key of it the config names."""

    def __init__(self, docs, config_map_name, config, job_name, secret_name, secret_key):
        self.docs, self.config_map_name, self.config = docs, config_map_name, config
        self.job_name, self.secret_name, self.secret_key = job_name, secret_name, secret_key

    def yaml(self):
        return yaml.safe_dump_all(self.docs, sort_keys=False)


def _one(docs, kind):
    found = [d for d in docs if d.get("kind") == kind]
    check(len(found) == 1, f"the manifest's {kind}s: {[d.get('metadata', {}).get('name') for d in found]}")
    return found[0]


def _secret_volume(spec):
    """The one secret volume of a pod spec, and where its container mounts it."""
    volumes = [v for v in spec.get("volumes", []) if "secret" in v]
    check(len(volumes) == 1, f"secret volumes of a pod: {volumes}")
    mounts = [m for c in spec["containers"] for m in c.get("volumeMounts", [])
              if m["name"] == volumes[0]["name"]]
    check(len(mounts) == 1, f"mounts of the secret volume {volumes[0]['name']}: {mounts}")
    return volumes[0], mounts[0]["mountPath"]


def playable(text, image, hosts, service):
    """The manifest with the lines a user edits too (the image; the
    ConfigMap's zookeeper.hosts and service) and what podman 4.3 needs."""
    docs = [d for d in yaml.safe_load_all(text) if d]
    config_map, job, deployment = (_one(docs, k) for k in ("ConfigMap", "Job", "Deployment"))
    config = json.loads(config_map["data"][CONFIG_KEY])
    config["zookeeper"]["hosts"] = hosts
    config["service"] = service
    config_map["data"][CONFIG_KEY] = json.dumps(config, indent=2) + "\n"

    pod_specs = [job["spec"]["template"]["spec"], deployment["spec"]["template"]["spec"]]
    secrets = set()
    for spec in pod_specs:
        for container in spec["containers"]:
            check(container["image"] == IMAGE_LINE, f"the manifest's image is {container['image']}")
            container["image"] = image
        volume, mounted_at = _secret_volume(spec)
        # The config names a file of the Secret's volume, in every pod.
        check(os.path.dirname(config["zookeeper"].get("auth_file", "")) == mounted_at,
               f"zookeeper.auth_file {config['zookeeper'].get('auth_file')} is not in the Secret's "
               f"volume, mounted at {mounted_at}")
        secrets.add(volume["secret"]["secretName"])
        # podman 4.3 dereferences `optional` of a secret volume without
        # looking (a nil pointer: it panics); false is Kubernetes' default.
        volume["secret"].setdefault("optional", False)
    check(len(secrets) == 1, f"the pods mount the Secrets {secrets}")

    # One replica: podman 4.3 plays an emptyDir as one volume named after it,
    # which every pod of the Deployment then shares (Kubernetes gives each pod
    # its own), and a daemon refuses a state directory another one holds.
    check(deployment["spec"].get("replicas") == 3, "the manifest's replicas moved")
    deployment["spec"]["replicas"] = 1
    # podman 4.3 publishes a containerPort on the host's port of the same
    # number, which Kubernetes does not (there it only names the port): three
    # replicas would contend for the host's 8080. The list goes; nothing of
    # the manifest uses it (the probes and the Service name the number).
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    check(container.get("ports") == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
           f"the manifest's ports: {container.get('ports')}")
    del container["ports"]
    # podman 4.3 plays no Job: the Job's pod is played as a Pod, as the Job's
    # controller would run it (once, until it exits 0).
    job_pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": job["metadata"]["name"], "labels": job["metadata"]["labels"]},
               "spec": job["spec"]["template"]["spec"]}
    docs = [job_pod if d is job else d for d in docs]
    return Played(docs, config_map["metadata"]["name"], config, job["metadata"]["name"],
                  secrets.pop(), os.path.basename(config["zookeeper"]["auth_file"]))


def secret_for_podman(name, key, value):
    """The Secret `kubectl create secret generic NAME --from-literal=KEY=VALUE`
    makes, as a document for `podman secret create`, in the form podman 4.3
    reads for a secret volume. A Secret played with the manifest would become
    the same podman secret, but 4.3 then writes the volume's files with
    `data` still base64-encoded, and without `stringData` at all: so the
    value goes in `data` as it is, which 4.3 writes out as it is."""
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
                           "type": "Opaque", "data": {key: value}}, sort_keys=False)
