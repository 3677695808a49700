#include "experiments/experiments.h"
