#pragma once
// The whole draftgate CLI (every verb, every registered check) as a function: the installed front
// end loads it from libdraftgate_engine.so, and a program that registers checks of its own
// (find_package(draftgate), draftgate::engine) calls it from main() to run them beside the bundled
// ones. Returns the exit code: 0 pass, 1 a check failed, 2 bad input or usage.

extern "C" __attribute__((visibility("default"))) int draftgate_engine_main(int argc, char** argv);
