# `safhire lanes demo`, `refresh`, `field` and `compare` with --json on N = 2^12 test spaces:
# each output must be one JSON object (CMake's own parser) whose fields agree with what was
# asked, with every integer right (the commands check them against GMP themselves and exit 1
# otherwise), and the refresh's --compare-cpu (the CPU on one thread against the CPU on every
# core) identical, in each of its three modes; a space made for --products-per-refresh 2 refreshes
# every two products. A secure space refuses --space of a test space without --insecure.
# `safhire lanes field` the same way on a field space; the integer commands refuse field spaces,
# and the field command a composite p. `safhire lanes compare` on two n, lanes and baseline;
# `safhire lanes convert`, every digit checked; `safhire lanes digits`, every result checked.
# Usage: cmake -DSAFHIRE=<path> -P lanes_cli.cmake
function(run_json out_var)
  execute_process(COMMAND ${SAFHIRE} ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "safhire ${ARGN} exited with ${rc}: ${err}")
  endif()
  string(JSON space ERROR_VARIABLE bad GET "${out}" space)
  if(bad)
    message(FATAL_ERROR "not JSON (${bad}): ${out}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

run_json(demo lanes demo --space lanes-n12-256-b2 --products 12 --insecure --json)
string(JSON products GET "${demo}" products)
string(JSON refreshes GET "${demo}" refreshes)
string(JSON wrong GET "${demo}" wrong_integers)
string(JSON checked GET "${demo}" integers_checked)
string(JSON lanes GET "${demo}" lanes)
string(JSON product_ms LENGTH "${demo}" product_ms)
if(NOT products EQUAL 12 OR NOT product_ms EQUAL 12 OR NOT wrong EQUAL 0 OR NOT lanes EQUAL 16
   OR NOT checked EQUAL 192 OR refreshes LESS 11)
  message(FATAL_ERROR "the demo's fields disagree with the request: ${demo}")
endif()

# A space made for the asked shape, refreshed every two products: one refresh per two products.
run_json(demo lanes demo --n 256 --beta 2 --log-n 12 --products-per-refresh 2 --products 8
         --insecure --json)
string(JSON space GET "${demo}" space)
string(JSON refreshes GET "${demo}" refreshes)
string(JSON wrong GET "${demo}" wrong_integers)
if(NOT space STREQUAL "lanes-n12-256-b2-k2" OR NOT refreshes EQUAL 3 OR NOT wrong EQUAL 0)
  message(FATAL_ERROR "the demo refreshed every two products wrongly: ${demo}")
endif()

foreach(mode IN ITEMS clean plain unreduced)
  run_json(refresh lanes refresh --space lanes-n12-8-b2 --runs 2 --mode ${mode} --compare-cpu
           --insecure --json)
  string(JSON got_mode GET "${refresh}" mode)
  string(JSON runs GET "${refresh}" runs)
  string(JSON digits GET "${refresh}" digits_refreshed)
  string(JSON wrong GET "${refresh}" wrong_integers)
  string(JSON identical GET "${refresh}" identical_to_cpu)
  string(JSON steps LENGTH "${refresh}" steps)
  set(expect_steps 8)  # plan, keygen, C, ModRaise, CoeffToSlot, two cleanings, L
  if(mode STREQUAL plain)
    set(expect_steps 5)  # plan, keygen, C, ModRaise, C^-1
  elseif(mode STREQUAL unreduced)
    set(expect_steps 7)  # plan, keygen, C, ModRaise and CoeffToSlot, two EvalMods, L
  endif()
  if(NOT got_mode STREQUAL mode OR NOT runs EQUAL 2 OR NOT digits EQUAL 8192 OR NOT wrong EQUAL 0
     OR NOT identical OR NOT steps EQUAL expect_steps)
    message(FATAL_ERROR "the ${mode} refresh's fields disagree with the request: ${refresh}")
  endif()
endforeach()

execute_process(COMMAND ${SAFHIRE} lanes demo --space lanes-n12-256-b2 OUTPUT_QUIET
                ERROR_VARIABLE err RESULT_VARIABLE rc)
if(rc EQUAL 0 OR NOT err MATCHES "insecure")
  message(FATAL_ERROR "a test space ran without --insecure (${rc}): ${err}")
endif()

# safhire lanes field: F_(17^8) elements (2 a lane, 64 lanes), a chain of 3 products and the final
# refresh, every element checked, the last product and refresh identical on one thread and on all.
run_json(field lanes field --space field-n12-17^8 --products 3 --compare-cpu --insecure --json)
string(JSON degree GET "${field}" extension_degree)
string(JSON elements GET "${field}" elements)
string(JSON checked GET "${field}" elements_checked)
string(JSON wrong GET "${field}" wrong_elements)
string(JSON refreshes GET "${field}" refreshes)
string(JSON identical GET "${field}" identical_to_cpu)
if(NOT degree EQUAL 8 OR NOT elements EQUAL 128 OR NOT checked EQUAL 512 OR NOT wrong EQUAL 0
   OR refreshes LESS 1 OR NOT identical)
  message(FATAL_ERROR "the field chain's fields disagree with the request: ${field}")
endif()

# A field space is refused by the integer commands, and a composite p by the field command.
execute_process(COMMAND ${SAFHIRE} lanes demo --space field-n12-65537 --insecure OUTPUT_QUIET
                ERROR_VARIABLE err RESULT_VARIABLE rc)
if(rc EQUAL 0 OR NOT err MATCHES "lanes field")
  message(FATAL_ERROR "lanes demo ran a field space (${rc}): ${err}")
endif()
execute_process(COMMAND ${SAFHIRE} lanes field --space lanes-n12-256-b2 --insecure OUTPUT_QUIET
                ERROR_VARIABLE err RESULT_VARIABLE rc)
if(rc EQUAL 0 OR NOT err MATCHES "not prime")
  message(FATAL_ERROR "lanes field ran a composite p (${rc}): ${err}")
endif()

# safhire lanes compare: the lanes and the mod-2^n baseline at n = 8 and 32 on N = 2^12, one timed
# product and refresh each after the warm-up, every integer checked (512 + 256 a run at n = 8,
# 128 + 64 at n = 32, twice); and the comparison's insecure chains refused without --insecure.
execute_process(COMMAND ${SAFHIRE} lanes compare --log-n 12 --n 8,32 --repeats 1 --json
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(rc EQUAL 0 OR NOT err MATCHES "insecure")
  message(FATAL_ERROR "lanes compare ran insecure chains without --insecure (${rc}): ${err}")
endif()
execute_process(COMMAND ${SAFHIRE} lanes compare --log-n 12 --n 8,32 --repeats 1 --insecure --json
                OUTPUT_VARIABLE compare ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "safhire lanes compare exited with ${rc}: ${err}")
endif()
string(JSON rows LENGTH "${compare}" rows)
string(JSON wrong GET "${compare}" wrong_integers)
string(JSON checked GET "${compare}" integers_checked)
string(JSON n1 GET "${compare}" rows 1 n)
string(JSON lanes_count GET "${compare}" rows 0 lanes integers_per_ciphertext)
string(JSON base_count GET "${compare}" rows 0 baseline integers_per_ciphertext)
string(JSON speedup GET "${compare}" rows 1 refresh_speedup)
if(NOT rows EQUAL 2 OR NOT wrong EQUAL 0 OR NOT checked EQUAL 1920 OR NOT n1 EQUAL 32
   OR NOT lanes_count EQUAL 512 OR NOT base_count EQUAL 256 OR NOT speedup GREATER 0)
  message(FATAL_ERROR "the comparison's fields disagree with the request: ${compare}")
endif()

# safhire lanes convert: form B -> A -> B three times on N = 2^12, n = 256: every one of the 4096
# digits a run checked in its slot, and the integers after the round trip.
execute_process(COMMAND ${SAFHIRE} lanes convert --log-n 12 --n 256 --runs 3 --insecure --json
                OUTPUT_VARIABLE convert ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "safhire lanes convert exited with ${rc}: ${err}")
endif()
string(JSON digits GET "${convert}" digits_checked)
string(JSON wrong GET "${convert}" wrong_digits)
string(JSON integers GET "${convert}" integers_checked)
string(JSON wrong_integers GET "${convert}" wrong_integers)
if(NOT digits EQUAL 12288 OR NOT wrong EQUAL 0 OR NOT integers EQUAL 48
   OR NOT wrong_integers EQUAL 0)
  message(FATAL_ERROR "the conversions' fields disagree with the request: ${convert}")
endif()

# safhire lanes digits: to_digits and the operations on canonical digits once on N = 2^12, n = 256
# (16 lanes): every digit of to_digits (4096), and less than, equal, a digit, a bit and
# from_digits, every lane's result checked against GMP by the command (5 x 16).
run_json(digits lanes digits --log-n 12 --n 256 --runs 1 --insecure --json)
string(JSON checked GET "${digits}" results_checked)
string(JSON wrong GET "${digits}" wrong)
string(JSON converted GET "${digits}" digits_converted)
string(JSON wrong_digits GET "${digits}" wrong_digits)
string(JSON lt_ms GET "${digits}" less_than_ms_median)
if(NOT checked EQUAL 80 OR NOT wrong EQUAL 0 OR NOT converted EQUAL 4096
   OR NOT wrong_digits EQUAL 0 OR NOT lt_ms GREATER 0)
  message(FATAL_ERROR "the digit operations' fields disagree with the request: ${digits}")
endif()
