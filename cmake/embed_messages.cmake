# Writes OUT, a C++ fragment holding every data file given in FILES
# (separated by |) as {name, text} raw string literals in the array VAR
# (default kBuiltinMessageFiles), ended by {nullptr, nullptr}. Run at build
# time by hangdx/ingest/messages/CMakeLists.txt (the message catalogue) and
# hangdx/analyze/CMakeLists.txt (the known-bug signatures), so editing a data
# file rebuilds what embeds it.
string(REPLACE "|" ";" FILES "${FILES}")
if(NOT VAR)
  set(VAR kBuiltinMessageFiles)
endif()
set(body "constexpr std::pair<const char*, const char*> ${VAR}[] = {\n")
foreach(f IN LISTS FILES)
  file(READ "${f}" text)
  get_filename_component(name "${f}" NAME)
  string(FIND "${text}" ")hangdx_msgs\"" bad)
  if(NOT bad EQUAL -1)
    message(FATAL_ERROR "${f} holds the raw-string delimiter )hangdx_msgs\"")
  endif()
  string(APPEND body "    {\"${name}\", R\"hangdx_msgs(${text})hangdx_msgs\"},\n")
endforeach()
string(APPEND body "    {nullptr, nullptr},\n};\n")
file(WRITE "${OUT}.tmp" "${body}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
