"""Issue 40, pass 15: under an address-space limit (`ulimit -v`) `import ragform` hung at exit: the
OpenBLAS that FAISS brings starts a worker per core with a 128 MB buffer, one spun, and exit
waited for it. The package sets OPENBLAS_NUM_THREADS=1 before the library loads under such a
limit, as the CLI does (src/cli/main.cpp)."""
import resource
import subprocess
import sys


def test_import_under_an_address_space_limit_exits():
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (200_000 * 1024, 200_000 * 1024))
    env = {k: v for k, v in __import__("os").environ.items() if k != "OPENBLAS_NUM_THREADS"}
    try:
        r = subprocess.run([sys.executable, "-c", "import ragform; print('imported')"],
                           preexec_fn=limit, env=env, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        raise AssertionError("import ragform under ulimit -v 200000 did not exit in 60 s")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "imported"
