"""How work uses the machine: one thread per free core, so that threads do not wait on a core another
process holds; freed memory kept for reuse where the C library is glibc."""

import pytest
import torch

from minigpt.machine import threads


@pytest.fixture
def two_cores(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 2)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield monkeypatch
    torch.set_num_threads(before)


@pytest.mark.parametrize("busy, expected", [(0.0, 2), (0.2, 2), (0.9, 1), (2.0, 1), (3.5, 1)])
def test_one_thread_per_free_core(two_cores, busy, expected):
    two_cores.setattr(threads, "busy_cores", lambda seconds=0: busy)
    count, why = threads.use_free_cores()
    assert count == expected == torch.get_num_threads()
    assert ("busy" in why) == (expected < 2)


def test_omp_num_threads_is_obeyed_and_no_proc_stat_keeps_the_default(two_cores):
    two_cores.setattr(threads, "busy_cores", lambda seconds=0: 2.0)
    two_cores.setenv("OMP_NUM_THREADS", "2")
    assert threads.choose_threads() == (2, "as OMP_NUM_THREADS says")
    two_cores.delenv("OMP_NUM_THREADS")
    two_cores.setattr(threads, "busy_cores", lambda seconds=0: None)
    assert threads.choose_threads()[0] == 2


def test_busy_cores_reads_the_kernels_counts():
    busy = threads.busy_cores(0.05)
    assert busy is None or 0 <= busy <= (threads.os.cpu_count() or 1)


def test_freed_memory_is_kept_where_the_c_library_is_glibc(monkeypatch):
    import ctypes
    import platform

    from minigpt.machine.threads import keep_freed_memory

    assert keep_freed_memory() is (platform.libc_ver()[0] == "glibc")
    assert torch.ones(2**20).sum() == 2**20  # memory is still served as before

    def no_glibc(_):
        raise OSError("libc.so.6: cannot open shared object file")

    monkeypatch.setattr(ctypes, "CDLL", no_glibc)  # macOS, musl: nothing is changed, and no error
    assert keep_freed_memory() is False
