"""A PythonScript's code runs in a child process of its own, shut in: every way out is a clear
refusal or a stop, and neither the server nor another script notices. Each case starts a
child (which imports torch), so the cases are few and small."""
from __future__ import annotations

import os
import threading

import torch

from apps.runs.sandbox import ScriptLimits, run_script

LIMITS = ScriptLimits(wall_s=60, cpu_s=30, memory_mb=256)


def script(body: str, inputs=None, params=None, limits=LIMITS):
    code = "def run(inputs, params):\n" + "".join(f"    {line}\n" for line in body.splitlines())
    return run_script(code, inputs or {}, params or {}, limits)


def test_a_script_returns_its_outputs_and_prints():
    result = script("print('sum is', inputs['in1'].sum().item())\nreturn {'out1': inputs['in1'] * 2, 'out2': params['k']}",
                    inputs={"in1": torch.ones(2, 3)}, params={"k": 7})
    assert result.error is None and result.printed == "sum is 6.0\n"
    assert torch.equal(result.outputs["out1"], torch.full((2, 3), 2.0)) and result.outputs["out2"] == 7


def test_a_value_that_is_not_a_dict_becomes_out1():
    assert script("return [1, 2]").outputs == {"out1": [1, 2]}


def test_reading_the_servers_files_is_refused():
    result = script("return open('/etc/passwd').read()")
    assert result.error == ("line 2: PermissionError: Scripts can only use files in their own scratch folder, "
                            "not '/etc/passwd'")


def test_its_own_scratch_folder_is_writable():
    assert script("open('notes.txt', 'w').write('hi')\nreturn open('notes.txt').read()").outputs == {"out1": "hi"}


def test_opening_a_socket_is_refused():
    result = script("import socket\nsocket.create_connection(('127.0.0.1', 80))")
    assert "Scripts cannot open network connections on this server" in result.error


def test_forking_is_refused():
    assert "Scripts cannot start other programs or processes" in script("import os\nreturn os.fork()").error


def test_importing_django_is_refused():
    assert script("import django").error == "line 2: ImportError: Scripts cannot import 'django' on this server"


def test_allocating_past_its_memory_is_stopped():
    result = script("x = torch.ones(100_000_000)\nreturn x.sum()")
    assert result.error == "line 2: MemoryError: the script needed more memory than a script may use"


def test_a_loop_past_its_cpu_time_is_stopped():
    result = script("while True:\n    pass", limits=ScriptLimits(wall_s=120, cpu_s=1))
    assert result.error == "The script used more than 1 seconds of CPU time and was stopped."


def test_a_script_past_its_wall_clock_is_stopped_and_another_is_unaffected():
    """A stuck script is ended at its deadline while a second one, beside it, answers."""
    stuck = {}
    thread = threading.Thread(target=lambda: stuck.update(r=script("import time\ntime.sleep(600)",
                                                                   limits=ScriptLimits(wall_s=8))))
    thread.start()
    assert script("return 41 + 1").outputs == {"out1": 42}
    thread.join()
    assert stuck["r"].error == "The script ran longer than 8 seconds and was stopped."
    assert os.getpid() > 0  # this process (the run worker's place) is still here


def test_errors_name_the_scripts_line():
    assert script("x = 1\nreturn x / 0").error == "line 3: ZeroDivisionError: division by zero"
    assert script("return (").error == "line 2: SyntaxError: '(' was never closed"


def test_an_output_over_the_element_limit_is_refused():
    result = script("return torch.zeros(1000)", limits=ScriptLimits(max_elements=100))
    assert "'out1' holds 1,000 elements, more than the 100 this server allows" in result.error


def test_the_scratch_is_mounted_before_python_is_bound_in():
    """A server installed under /tmp (a CI clone there): its venv is bound over the sandbox's own
    /tmp, not hidden by it, so scripts still run."""
    from apps.runs.sandbox import SCRATCH, bwrap_argv
    argv = bwrap_argv(8)
    scratch = next(i for i, a in enumerate(argv) if a == "--tmpfs" and argv[i + 1] == SCRATCH)
    assert scratch < argv.index("--ro-bind")
