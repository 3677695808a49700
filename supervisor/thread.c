#include "supervisor/supervisor.h"
