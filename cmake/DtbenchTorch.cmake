# Finds LibTorch and what comes with it. Two flavours (README "Build flavours"):
#  - debian: Debian's libtorch-dev 1.13, CPU only (the default);
#  - wheel:  the LibTorch inside a PyTorch wheel (2.11 + CUDA + NCCL), given
#            by -DDTBENCH_TORCH_PREFIX=<site-packages>/torch/share/cmake
#            (scripts/torch_wheel.sh finds or installs one; `make ... TORCH=wheel`).
#            Without the option, a python3 whose torch is a CUDA build is used.
# Sets DTBENCH_TORCH_SOURCE, DTBENCH_HAVE_CUDA, DTBENCH_HAVE_NCCL, the target
# dtbench_fmt (the fmt every target uses) and TENSORPIPE_INCLUDE_DIR/LIBRARY.
set(DTBENCH_HAVE_CUDA 0)
set(DTBENCH_HAVE_NCCL 0)
set(DTBENCH_TORCH_SOURCE "debian")
if(NOT DEFINED DTBENCH_TORCH_PREFIX)
  execute_process(
    COMMAND python3 -c "import torch,sys; sys.stdout.write(torch.utils.cmake_prefix_path if torch.version.cuda else '')"
    OUTPUT_VARIABLE _torch_prefix ERROR_QUIET RESULT_VARIABLE _torch_rc)
  if(_torch_rc EQUAL 0 AND _torch_prefix)
    set(DTBENCH_TORCH_PREFIX "${_torch_prefix}")
  endif()
endif()
if(DTBENCH_TORCH_PREFIX)
  # <root>/share/cmake -> <root>: TorchConfig's find_library() calls search
  # the system first unless <root> leads CMAKE_PREFIX_PATH (Debian's
  # libtorch.so would otherwise win).
  get_filename_component(_torch_root "${DTBENCH_TORCH_PREFIX}/../.." ABSOLUTE)
  list(PREPEND CMAKE_PREFIX_PATH "${_torch_root}" "${DTBENCH_TORCH_PREFIX}")
  set(DTBENCH_TORCH_SOURCE "wheel")
endif()
find_package(Torch REQUIRED)
if(TORCH_CXX_FLAGS)
  separate_arguments(_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
  add_compile_options(${_torch_flags})
endif()
if(DTBENCH_TORCH_SOURCE STREQUAL "wheel")
  foreach(_lib ${TORCH_LIBRARY} ${C10_LIBRARY})
    if(NOT _lib MATCHES "^${_torch_root}/")
      message(FATAL_ERROR "LibTorch: ${_lib} is not from ${_torch_root}; a system LibTorch shadows the wheel")
    endif()
  endforeach()
endif()
if(C10_CUDA_LIBRARY)
  set(DTBENCH_HAVE_CUDA 1)
  # ProcessGroupNCCL is built into every CUDA wheel of PyTorch 2.x; the
  # nccl backend (src/comm/nccl/) is built where its sources are.
  if(EXISTS "${_torch_root}/include/torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp"
     AND EXISTS "${CMAKE_CURRENT_SOURCE_DIR}/src/comm/nccl/nccl_communicator.cc")
    set(DTBENCH_HAVE_NCCL 1)
  endif()
endif()

# Versions compiled in (reported by `dtbench env`): the CUDA toolkit
# TorchConfig found, and cuDNN / NCCL from their headers in it.
set(DTBENCH_CUDA_VERSION "")
set(DTBENCH_CUDNN_VERSION "")
set(DTBENCH_NCCL_VERSION "")
function(_dtbench_header_version out header)
  set(_parts "")
  foreach(_macro ${ARGN})
    file(STRINGS "${header}" _line REGEX "^#define ${_macro} +[0-9]+")
    string(REGEX REPLACE "^#define ${_macro} +([0-9]+).*" "\\1" _v "${_line}")
    list(APPEND _parts "${_v}")
  endforeach()
  string(REPLACE ";" "." _joined "${_parts}")
  set(${out} "${_joined}" PARENT_SCOPE)
endfunction()
if(DTBENCH_HAVE_CUDA)
  set(DTBENCH_CUDA_VERSION "${CUDA_VERSION}")
  foreach(_inc ${CUDAToolkit_INCLUDE_DIRS} ${CUDA_INCLUDE_DIRS} /usr/local/cuda/include)
    if(NOT DTBENCH_CUDNN_VERSION AND EXISTS "${_inc}/cudnn_version.h")
      _dtbench_header_version(DTBENCH_CUDNN_VERSION "${_inc}/cudnn_version.h" CUDNN_MAJOR CUDNN_MINOR CUDNN_PATCHLEVEL)
    endif()
    if(NOT DTBENCH_NCCL_VERSION AND EXISTS "${_inc}/nccl.h")
      _dtbench_header_version(DTBENCH_NCCL_VERSION "${_inc}/nccl.h" NCCL_MAJOR NCCL_MINOR NCCL_PATCH)
    endif()
  endforeach()
endif()

# fmt: the wheel ships fmt headers next to its own (12.x) and c10d's headers
# use them, so a wheel build uses them header-only everywhere; Debian's build
# links Debian's libfmt. One fmt per binary either way.
add_library(dtbench_fmt INTERFACE)
if(DTBENCH_TORCH_SOURCE STREQUAL "wheel")
  set(_fmt_dir "${CMAKE_BINARY_DIR}/generated/wheel-fmt")
  file(MAKE_DIRECTORY "${_fmt_dir}")
  file(CREATE_LINK "${_torch_root}/include/fmt" "${_fmt_dir}/fmt" SYMBOLIC)
  target_include_directories(dtbench_fmt SYSTEM INTERFACE "${_fmt_dir}")
  target_compile_definitions(dtbench_fmt INTERFACE FMT_HEADER_ONLY=1)
else()
  find_package(fmt REQUIRED)
  target_link_libraries(dtbench_fmt INTERFACE fmt::fmt)
endif()

# TensorPipe: Debian's libtensorpipe beside Debian's LibTorch; a wheel
# carries its own copy inside libtorch_cpu (headers + exported symbols), and
# a second copy from Debian would clash with it.
if(DTBENCH_TORCH_SOURCE STREQUAL "wheel")
  set(TENSORPIPE_INCLUDE_DIR "${_torch_root}/include")
  find_library(TENSORPIPE_LIBRARY torch_cpu PATHS "${_torch_root}/lib" NO_DEFAULT_PATH)
else()
  find_path(TENSORPIPE_INCLUDE_DIR tensorpipe/tensorpipe.h)
  find_library(TENSORPIPE_LIBRARY tensorpipe)
endif()
if(NOT TENSORPIPE_INCLUDE_DIR OR NOT TENSORPIPE_LIBRARY)
  message(FATAL_ERROR "TensorPipe not found: install libtensorpipe-dev (scripts/setup.sh does)")
endif()

# c10d/reducer.hpp includes the dist-autograd context header, which Debian's
# libtorch-dev does not ship; an opaque stand-in lives in src/compat/shim.
set(DTBENCH_TORCH_SHIM "")
set(_have_context FALSE)
foreach(_dir ${TORCH_INCLUDE_DIRS})
  if(EXISTS "${_dir}/torch/csrc/distributed/autograd/context/context.h")
    set(_have_context TRUE)
  endif()
endforeach()
if(NOT _have_context)
  set(DTBENCH_TORCH_SHIM "${CMAKE_CURRENT_SOURCE_DIR}/src/compat/shim")
endif()
