# `safhire ckks bootstrap --json` on the N = 2^12 test ring: the output must be one JSON object
# (CMake's own parser) whose fields agree with what was asked (slots, order, runs) and whose
# precision, measured by the command against its own random input, clears 20 bits. Sparse slots
# in the classic order pack both parts into one EvalMod (one step fewer) unless --unpacked.
# Usage: cmake -DSAFHIRE=<path> -P ckks_bootstrap_cli.cmake
foreach(slim IN ITEMS "" "--slim" "--unpacked")
  execute_process(
    COMMAND ${SAFHIRE} ckks bootstrap --insecure --slots 64 --runs 2 --json ${slim}
    OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "safhire ckks bootstrap ${slim} exited with ${rc}: ${err}")
  endif()
  string(JSON slots ERROR_VARIABLE bad GET "${out}" slots)
  if(bad)
    message(FATAL_ERROR "not JSON (${bad}): ${out}")
  endif()
  string(JSON is_slim GET "${out}" slim)
  string(JSON runs GET "${out}" runs)
  string(JSON bits GET "${out}" mean_precision_bits)
  string(JSON failure GET "${out}" log2_failure_bound)
  string(JSON steps LENGTH "${out}" steps)
  set(expect_slim OFF)
  set(expect_steps 7)
  if(slim STREQUAL "--slim")
    set(expect_slim ON)
  elseif(slim STREQUAL "")
    set(expect_steps 6)
  endif()
  if(NOT slots EQUAL 64 OR NOT runs EQUAL 2 OR NOT steps EQUAL expect_steps)
    message(FATAL_ERROR "fields disagree with the request: ${out}")
  endif()
  if((expect_slim AND NOT is_slim) OR (NOT expect_slim AND is_slim))
    message(FATAL_ERROR "slim flag ${is_slim} for '${slim}': ${out}")
  endif()
  if(bits LESS 20 OR NOT failure LESS -100)
    message(FATAL_ERROR "precision ${bits} bits or failure bound 2^${failure}: ${out}")
  endif()
endforeach()
