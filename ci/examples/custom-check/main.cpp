// Every draftgate verb, with the checks registered by this program's other files added.
#include <draftgate/engine_main.h>

int main(int argc, char** argv) { return draftgate_engine_main(argc, argv); }
