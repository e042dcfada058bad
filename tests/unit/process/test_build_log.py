"""build_log.first_error: the line a failed build's summary quotes, on logs shaped like real ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from kestrel_release.process import build_log

# A torch CUDAExtension build with ninja: the cause sits between warnings, far above the traceback.
TORCH_NINJA = """\
+ uv build --wheel --no-build-isolation /cache/sources/3.12
Building wheel...
running build_ext
[1/3] /usr/local/cuda/bin/nvcc --generate-dependencies-with-compile -c /src/csrc/a.cu -o a.o -gencode arch=compute_90a,code=sm_90a -Werror=all
FAILED: /src/build/temp/csrc/foo.o
/usr/local/cuda/bin/nvcc -c /src/csrc/foo.cu -o /src/build/temp/csrc/foo.o -lineinfo
/src/csrc/foo.cu(12): error: identifier "x" is undefined
      int y = x + 1;
              ^

1 error detected in the compilation of "/src/csrc/foo.cu".
{warnings}[2/3] c++ -MMD -c /src/csrc/bind.cpp -o bind.o
/usr/include/torch/csrc/api/include/torch/nn.h:3:2: warning: #warning deprecated [-Wcpp]
ninja: build stopped: subcommand failed.
Traceback (most recent call last):
  File "/venv/lib/python3.12/site-packages/torch/utils/cpp_extension.py", line 2100, in _run_ninja_build
    subprocess.run(
subprocess.CalledProcessError: Command '['ninja', '-v', '-j', '16']' returned non-zero exit status 1.

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
RuntimeError: Error compiling objects for extension
  x Failed to build `/cache/sources/3.12`
  |-> The build backend returned an error
""".replace(
    "{warnings}", '/src/csrc/bar.cu(3): warning #177-D: variable "z" was declared but never referenced\n' * 3000
)


@pytest.mark.parametrize(
    ("log", "expected"),
    [
        (TORCH_NINJA, '/src/csrc/foo.cu(12): error: identifier "x" is undefined'),
        (  # CUDA_HOME=/usr/local: gcc cannot find the toolkit's headers
            "In file included from /venv/torch/include/ATen/cuda/CUDAContext.h:3,\n"
            "                 from /src/csrc/ops.cpp:2:\n"
            "/venv/torch/include/ATen/cuda/CUDAContextLight.h:6:10: fatal error: cuda_runtime_api.h: "
            "No such file or directory\n"
            "    6 | #include <cuda_runtime_api.h>\n"
            "compilation terminated.\n"
            "error: command '/usr/bin/gcc' failed with exit code 1\n"
            "RuntimeError: Error compiling objects for extension\n",
            "/venv/torch/include/ATen/cuda/CUDAContextLight.h:6:10: fatal error: cuda_runtime_api.h: "
            "No such file or directory",
        ),
        (  # gcc on a C extension, setuptools without ninja
            "building 'mini_ext._c' extension\n"
            "gcc -fno-strict-overflow -Wsign-compare -DNDEBUG -g -O3 -fPIC -c src/c.c -o build/c.o\n"
            "src/c.c: In function 'PyInit__c':\n"
            "src/c.c:3:44: error: 'undeclared_thing' undeclared (first use in this function)\n"
            "error: command '/usr/bin/gcc' failed with exit code 1\n",
            "src/c.c:3:44: error: 'undeclared_thing' undeclared (first use in this function)",
        ),
        (  # the linker: the reference, not collect2's summary
            "g++ -shared build/a.o -o build/_c.so\n"
            "/usr/bin/ld: build/a.o: in function `PyInit__c':\n"
            "a.cpp:(.text+0x1b): undefined reference to `missing_function'\n"
            "collect2: error: ld returned 1 exit status\n"
            "error: command '/usr/bin/g++' failed with exit code 1\n",
            "a.cpp:(.text+0x1b): undefined reference to `missing_function'",
        ),
        ("/usr/bin/ld: cannot find -lcudart: No such file or directory\n", None),
        (  # nvcc about itself
            "nvcc fatal   : Unsupported gpu architecture 'compute_99'\nninja: build stopped: subcommand failed.\n",
            "nvcc fatal   : Unsupported gpu architecture 'compute_99'",
        ),
        ("ptxas error   : Entry function '_Z3fooPf' uses too much shared data\n", None),
        (  # CMake (scikit-build-core)
            "-- Configuring incomplete, errors occurred!\n"
            "CMake Error at CMakeLists.txt:4 (find_package):\n"
            '  Could not find a package configuration file provided by "Torch"\n'
            "*** CMake configuration failed\n",
            "CMake Error at CMakeLists.txt:4 (find_package):",
        ),
        (  # clang / lld
            "ld.lld: error: undefined symbol: foo\n>>> referenced by a.o\nclang: error: linker command failed\n",
            "ld.lld: error: undefined symbol: foo",
        ),
        (  # MSVC
            "ops.cpp(7): fatal error C1083: Cannot open include file: 'cuda.h': No such file or directory\n",
            None,
        ),
        (  # no compiler ran: the Python exception is the cause
            "Traceback (most recent call last):\n"
            '  File "setup.py", line 3, in <module>\n'
            "FileNotFoundError: [Errno 2] No such file or directory: '../README.md'\n",
            "FileNotFoundError: [Errno 2] No such file or directory: '../README.md'",
        ),
        (
            "ninja: build stopped: subcommand failed.\nRuntimeError: Error compiling objects for extension\n",
            "ninja: build stopped: subcommand failed.",
        ),
        ("everything fine\nwarning: nothing\n", "-"),
    ],
)
def test_the_first_real_error_is_quoted(log: str, expected: str | None) -> None:
    want = None if expected == "-" else expected or log.splitlines()[0]
    assert build_log.first_error(log.splitlines()) == want


def test_warnings_and_echoed_commands_are_not_errors() -> None:
    log = [
        "/src/a.cu(3): warning #177-D: variable declared but never used",
        "src/a.c:1:1: warning: 'error: x' in a string [-Werror=format]",
        "+ gcc -Werror=implicit -c a.c -o a.o",
        "/usr/local/cuda/bin/nvcc -c a.cu -Xcompiler -Werror -o a.o: error: ",
    ]
    assert build_log.first_error(log) is None


def test_a_long_line_is_cut(tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    log.write_text("src/a.c:1:1: error: " + "x" * 5000 + "\n")
    quoted = build_log.first_error_in(log)
    assert quoted is not None and len(quoted) == 400 and quoted.endswith("...")
    assert build_log.first_error_in(tmp_path / "missing.log") is None
