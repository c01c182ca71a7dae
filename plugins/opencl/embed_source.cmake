# SPDX-License-Identifier: Apache-2.0
# Turns one OpenCL C file into a C file defining `const char NAME[]`: the text of PREAMBLE (what
# every program starts with), then the file's, and a final NUL, so that the plug-in carries the
# kernels it builds and the .cl files stay the one source.
# Usage: cmake -DPREAMBLE=common.clh -DINPUT=file.cl -DOUTPUT=file.c -DNAME=symbol
#        -P embed_source.cmake
file(READ "${PREAMBLE}" preamble HEX)
file(READ "${INPUT}" bytes HEX)
string(PREPEND bytes "${preamble}")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${bytes}")
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){16})" "\\1\n    " bytes "${bytes}")
file(WRITE "${OUTPUT}.tmp"
  "/* Generated from ${PREAMBLE} and ${INPUT} by embed_source.cmake; edit those. */\n"
  "extern const char ${NAME}[];\n"
  "const char ${NAME}[] = {\n    ${bytes}0x00};\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
