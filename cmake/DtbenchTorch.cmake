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
