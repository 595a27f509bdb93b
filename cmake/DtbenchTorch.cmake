# Finds LibTorch. Where python3 has a PyTorch with CUDA, its bundled LibTorch
# is used (GPU builds); otherwise Debian's libtorch-dev (CPU). Sets
# DTBENCH_HAVE_CUDA and DTBENCH_TORCH_SOURCE.
set(DTBENCH_HAVE_CUDA 0)
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
  list(PREPEND CMAKE_PREFIX_PATH "${DTBENCH_TORCH_PREFIX}")
  set(DTBENCH_TORCH_SOURCE "python-wheel")
endif()
find_package(Torch REQUIRED)
if(TORCH_CXX_FLAGS)
  separate_arguments(_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
  add_compile_options(${_torch_flags})
endif()
if(CUDA_FOUND OR TARGET torch::cudart OR TORCH_CUDA_LIBRARIES)
  set(DTBENCH_HAVE_CUDA 1)
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
