// Renders the config schema (schema.h) as the Markdown of docs/config-reference.md. The
// kturn-config-reference tool writes it; tests/config/config_reference_test.cc checks that the
// committed file is what this renders.
#pragma once

#include <span>
#include <string>

#include "config/schema.h"

namespace kturn::config {

// One section per container, each a table of the fields directly in it: the top level, then each
// container followed by the containers inside it (admin, admin.license_config, admin.limits,
// auth, auth.credentials, listeners[], clusters[]). The same schema gives the same bytes.
std::string renderConfigReference(std::span<const FieldSpec> schema);

}  // namespace kturn::config
