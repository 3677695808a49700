#include "symbols/symbols.h"
