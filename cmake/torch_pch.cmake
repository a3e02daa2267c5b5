# libtorch's ATen header costs ~10 s in every translation unit that includes it (68 of draftgate's 178);
# a precompiled copy per target that uses it takes minutes off a clean build. OFF compiles without.
option(DRAFTGATE_PCH "Precompile libtorch's ATen header in the targets that include it" ON)

function(draftgate_torch_pch target)
  if(DRAFTGATE_PCH)
    target_precompile_headers(${target} PRIVATE <ATen/ATen.h>)
  endif()
endfunction()
