"""The library as a user gets it: the wheel built offline from Debian's
packages, its version the server's, and the example run as its README says."""

import os
import re
import subprocess
import sys
import zipfile

import snowflaked_client

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.dirname(HERE)
TOP = os.path.dirname(os.path.dirname(PROJECT))


def server_version():
    with open(os.path.join(TOP, "CMakeLists.txt"), encoding="utf-8") as f:
        return re.search(r"project\(snowflaked VERSION ([0-9.]+)", f.read()).group(1)


def test_the_version_is_the_servers():
    with open(os.path.join(PROJECT, "pyproject.toml"), encoding="utf-8") as f:
        declared = re.search(r'^version = "([^"]+)"', f.read(), re.M).group(1)
    assert declared == snowflaked_client.__version__ == server_version()


def test_a_wheel_built_offline_installs_and_imports(tmp_path):
    # From a copy: a build leaves its build/ and egg-info behind.
    src = tmp_path / "src"
    subprocess.run(["cp", "-r", PROJECT, str(src)], check=True)
    subprocess.run(["rm", "-rf", str(src / "tests"), str(src / ".pytest_cache")], check=True)
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--no-index", "-q", "-w", str(wheels), str(src)], check=True)
    (wheel,) = wheels.iterdir()
    assert wheel.name == f"snowflaked_client-{server_version()}-py3-none-any.whl"
    names = zipfile.ZipFile(wheel).namelist()
    assert "snowflaked_client/leased.py" in names
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "-q",
                    "--target", str(target), str(wheel)], check=True)
    out = subprocess.run([sys.executable, "-c",
                          "import snowflaked_client as s; print(s.__file__, s.__version__)"],
                         env={"PYTHONPATH": str(target)}, capture_output=True, text=True, check=True)
    path, version = out.stdout.split()
    assert path.startswith(str(target)) and version == server_version()


def run_example(cluster, *args):
    env = dict(os.environ, SNOWFLAKED_SERVERS=",".join(cluster.servers))
    env.pop("PYTHONPATH", None)
    return subprocess.run([os.path.join(PROJECT, "examples", "ids.sh"), *args], env=env,
                          capture_output=True, text=True, timeout=60)


def test_the_example_prints_ids_in_each_mode(cluster):
    seen = set()
    for mode in ("remote", "buffered", "leased"):
        done = run_example(cluster, "--mode", mode, "--count", "25")
        assert done.returncode == 0, done.stderr
        ids = [int(line) for line in done.stdout.split()]
        assert len(ids) == 25
        seen.update(ids)
    assert len(seen) == 75


def test_the_example_fails_with_the_error_on_stderr():
    env = dict(os.environ, SNOWFLAKED_SERVERS="http://127.0.0.1:1")
    done = subprocess.run([os.path.join(PROJECT, "examples", "ids.sh"), "--count", "1"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == ""
    assert "connection refused" in done.stderr
