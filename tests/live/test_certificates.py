"""Certificates the openssl command line makes for the live tests: a CA of
the test's own, and server certificates it signs (what cert-manager or a
company CA would issue). Debian's python3 and openssl only."""

import os
import subprocess

KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def _openssl(work, *args):
    subprocess.run(["openssl", *args], check=True, cwd=work, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def _read(work, name):
    with open(os.path.join(work, name), encoding="utf-8") as f:
        return f.read()


def server_certificate(work, names=(), ips=(), serial=1):
    """A certificate for the DNS `names` and the addresses `ips`, signed by
    the CA in `work` (made on first use): {"ca.crt", "tls.crt", "tls.key"},
    PEM text each, the keys of cert-manager's Secret."""
    if not os.path.exists(os.path.join(work, "ca.crt")):
        _openssl(work, "req", "-x509", *KEY, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
                 "-subj", "/CN=live test CA")
    stem = f"server-{serial}"
    subject = names[0] if names else ips[0]
    _openssl(work, "req", "-new", *KEY, "-keyout", f"{stem}.key", "-out", f"{stem}.csr",
             "-subj", f"/CN={subject}")
    alt = ",".join([f"DNS:{n}" for n in names] + [f"IP:{ip}" for ip in ips])
    with open(os.path.join(work, f"{stem}.cnf"), "w", encoding="utf-8") as f:
        f.write(f"subjectAltName={alt}\nextendedKeyUsage=serverAuth\n")
    _openssl(work, "x509", "-req", "-in", f"{stem}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-set_serial", str(serial), "-days", "2", "-out", f"{stem}.crt", "-extfile", f"{stem}.cnf")
    return {"ca.crt": _read(work, "ca.crt"), "tls.crt": _read(work, f"{stem}.crt"),
            "tls.key": _read(work, f"{stem}.key")}
