# SEXTANT_SANITIZE=ON instruments everything built with ASan + UBSan (any compiler that has them;
# scripts/sanitize-readers.sh configures a clang folder this way for the readers' tests). Any
# finding aborts the process: -fno-sanitize-recover makes UB an error, not a log line.
option(SEXTANT_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
if(SEXTANT_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
