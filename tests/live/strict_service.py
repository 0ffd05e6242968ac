"""A strict tag asked through a Kubernetes Service, as its clients ask it: the
Service played by the clients themselves, who send each request on a new
connection to one of its pods picked at random (what kube-proxy does with
each connection). Every request must be answered, every number once, in
real-time order: a request sent after another's answer came gets a larger
number, whichever pods the two reached.

Also the certificate a TLS fleet's pods share (what cert-manager would
issue). Debian's python3 and openssl only.
"""

import http.client
import json
import random
import ssl
import threading
import time

import test_certificates
from livetest import check

SERVICE_NAME = "snowflaked"  # the name the fleet's certificate carries: http.forward_tls_name


def certificates(work, ips):
    """What the fleet's pods share (cert-manager's Secret): a certificate for
    SERVICE_NAME and every address in `ips`, from the test's CA."""
    return test_certificates.server_certificate(work, names=[SERVICE_NAME], ips=ips)


def _connection(ip, port, ca_file):
    if not ca_file:
        return http.client.HTTPConnection(ip, port, timeout=10)
    # Verified against the CA, by the pod's address (the certificate names it).
    return http.client.HTTPSConnection(ip, port, timeout=10,
                                       context=ssl.create_default_context(cafile=ca_file))


def ask_through_service(pod_ips, port, tag, per_client, clients=2, ca_file=None):
    """Each client sends `per_client` requests for /seq/TAG, one after the
    other, each to a pod picked at random, on a new connection. Returns
    [(sent, answered, pod, status, body)] with the monotonic times."""
    records, lock = [], threading.Lock()

    def client(seed):
        pick = random.Random(seed)
        for _ in range(per_client):
            ip = pick.choice(pod_ips)
            conn = _connection(ip, port, ca_file)
            sent = time.monotonic()
            try:
                conn.request("GET", f"/seq/{tag}")
                response = conn.getresponse()
                status, body = response.status, response.read().decode()
            except Exception as e:  # noqa: BLE001 - any failure is an unanswered request
                status, body = 0, repr(e)
            finally:
                conn.close()
            answered = time.monotonic()
            with lock:
                records.append((sent, answered, ip, status, body))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    check(not any(t.is_alive() for t in threads), "a client still asking after 600 s")
    check(len(records) == clients * per_client,
          f"{len(records)} requests recorded of {clients * per_client}")
    return records


def check_answered_in_order(records):
    """Every request 200, every number once, and a request sent after
    another was answered has the larger number. Returns (answered, pairs
    checked, pods asked)."""
    failed = [r for r in records if r[3] != 200]
    check(not failed, f"{len(failed)} of {len(records)} requests not answered 200, e.g. {failed[:3]}")
    def number(body):  # "number" beside a template's "id", else the plain number is the id
        answer = json.loads(body)
        return int(answer.get("number", answer["id"]))
    numbers = [(sent, answered, number(body)) for sent, answered, _, _, body in records]
    check(len({n for _, _, n in numbers}) == len(numbers), "a number handed out twice")
    # By answer time: the largest number answered before each request was sent.
    by_answer = sorted(numbers, key=lambda r: r[1])
    pairs, i, largest = 0, 0, None
    for sent, _, number in sorted(numbers, key=lambda r: r[0]):
        while i < len(by_answer) and by_answer[i][1] < sent:
            largest = by_answer[i][2] if largest is None else max(largest, by_answer[i][2])
            i += 1
        pairs += i
        check(largest is None or number > largest,
              f"number {number} was sent after {largest} was answered: out of real-time order")
    return len(records), pairs, len({r[2] for r in records})
