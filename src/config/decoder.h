// Decodes a config tree (see document.h) into the model, the way Go's encoding/json fills
// stunnerd's structs: keys match field names exactly or else case-insensitively ("logLevel"
// fills loglevel), unknown keys are ignored, null leaves a field unset, and a value of the wrong
// type is an error naming the field. Private to src/config.
#pragma once

#include <map>
#include <string>

#include "config/document.h"
#include "config/stunner_config.h"
#include "kturn/result.h"

namespace kturn::config {

Result<StunnerConfig> decodeStunnerConfig(const Json& root);

// auth.credentials alone, read leniently (anything unreadable is skipped). Used on the text as
// written, before environment substitution, to put the credentials back afterwards.
std::map<std::string, std::string> decodeRawCredentials(const Json& root);

}  // namespace kturn::config
