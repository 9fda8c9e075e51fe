# The device check's guard, checked in CI: run a device-listing test and one fixture test of
# test_cuda with and without SAFHIRE_REQUIRE_CUDA=1. Without a device the plain run must pass with
# the tests skipped ("no CUDA device") and the required run must fail, naming the variable; with a
# device both must pass. Usage: cmake -DTEST_CUDA=<test_cuda> -P require_cuda.cmake
set(filter "CudaDevice.*:*CudaKernels.NttForwardAndInverseMatchCpu/3_2")
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=SAFHIRE_REQUIRE_CUDA
                        ${TEST_CUDA} --gtest_filter=${filter}
                RESULT_VARIABLE plain_rc OUTPUT_VARIABLE plain_out ERROR_VARIABLE plain_out)
execute_process(COMMAND ${CMAKE_COMMAND} -E env SAFHIRE_REQUIRE_CUDA=1
                        ${TEST_CUDA} --gtest_filter=${filter}
                RESULT_VARIABLE required_rc OUTPUT_VARIABLE required_out ERROR_VARIABLE required_out)
if(NOT plain_out MATCHES "Running 2 tests")
  message(FATAL_ERROR "the filter should select 2 tests:\n${plain_out}")
endif()
if(plain_out MATCHES "no CUDA device")
  if(NOT plain_rc EQUAL 0 OR NOT plain_out MATCHES "2 tests, listed below:")
    message(FATAL_ERROR "without a device the tests should be skipped, both:\n${plain_out}")
  endif()
  if(required_rc EQUAL 0)
    message(FATAL_ERROR "SAFHIRE_REQUIRE_CUDA=1 without a device passed:\n${required_out}")
  endif()
  if(NOT required_out MATCHES "SAFHIRE_REQUIRE_CUDA=1 asks for one"
     OR NOT required_out MATCHES "2 FAILED TESTS" OR required_out MATCHES "SKIPPED")
    message(FATAL_ERROR "SAFHIRE_REQUIRE_CUDA=1 should fail both, naming the device:\n"
                        "${required_out}")
  endif()
  message(STATUS "no device: skipped without SAFHIRE_REQUIRE_CUDA, failed with it")
else()
  if(NOT plain_rc EQUAL 0 OR NOT required_rc EQUAL 0)
    message(FATAL_ERROR "with a device both runs should pass:\n${plain_out}\n${required_out}")
  endif()
  message(STATUS "device present: both runs passed")
endif()
