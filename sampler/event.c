#include "sampler/sampler.h"
