// kturn's reading of STUNner's dataplane config: one include for users of the library.
#pragma once

#include "config/default_config.h"  // IWYU pragma: export
#include "config/defaults.h"        // IWYU pragma: export
#include "config/endpoint.h"        // IWYU pragma: export
#include "config/parser.h"          // IWYU pragma: export
#include "config/serializer.h"      // IWYU pragma: export
#include "config/stunner_config.h"  // IWYU pragma: export
#include "config/turn_uri.h"        // IWYU pragma: export
#include "config/validator.h"       // IWYU pragma: export
