#include "config/config_reference.h"

#include <limits>

namespace kturn::config {
namespace {

// The page's head.
constexpr std::string_view kHeader =
    "<!-- Generated from src/config/schema.cc by kturn-config-reference. Do not edit:\n"
    "change the table and run `make config-reference`. -->\n"
    "\n"
    "# Dataplane config reference\n"
    "\n"
    "Every field of the dataplane config (`version: v1`) that kturnd reads, generated from the\n"
    "table in [src/config/schema.cc](../src/config/schema.cc). The tests in\n"
    "[schema_test.cc](../tests/config/schema_test.cc) hold that table to the code: each field is\n"
    "read, validated and written back; each default, range and set of values is the one kturnd\n"
    "applies; each key kturnd writes out has an entry. [config.md](config.md) explains the\n"
    "format around the fields: key matching, environment substitution, endpoint syntax,\n"
    "examples.\n"
    "\n"
    "A path reads as in error messages, with `[]` for a list index: `listeners[1].port: must be\n"
    "1-65535` is about `listeners[].port`. **default** is the value an absent field takes; —\n"
    "means none, the field stays unset. **origin** STUNner: stunnerd reads the field too, and\n"
    "where kturn reads it differently the description says so (**kturn**); **kturn**: an\n"
    "extension that stunnerd ignores.\n";

std::string code(std::string_view text) {
  if (text.empty()) return "`\"\"`";
  std::string out = "`";
  out.append(text).append("`");
  return out;
}

std::string joinCode(std::span<const std::string_view> words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += ", ";
    out += code(words[i]);
  }
  return out;
}

// A table cell: a '|' would end it, a line break would end the row.
std::string cell(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string typeName(const FieldSpec& f) {
  const std::string format(f.format);
  switch (f.type) {
    case FieldType::kString:
      return format.empty() ? "string" : format;
    case FieldType::kInteger:
      return format.empty() ? "integer" : "integer (" + format + ")";
    case FieldType::kBoolean:
      return "boolean";
    case FieldType::kStringList:
      return "list of " + (format.empty() ? std::string("strings") : format);
    case FieldType::kStringMap:
      return "map of strings";
    case FieldType::kObject:
      return "object";
    case FieldType::kObjectList:
      return "list of objects";
  }
  return "";
}

std::string acceptedText(const FieldSpec& f) {
  std::string out;
  if (!f.values.empty()) {
    out = joinCode(f.values);
    if (!f.aliases.empty()) out += "; aliases " + joinCode(f.aliases);
    if (f.any_case) out += "; any letter case";
  }
  if (f.range) {
    if (f.range->max == std::numeric_limits<int>::max()) {
      out = std::to_string(f.range->min) + " or more";
    } else {
      out = std::to_string(f.range->min) + "–" + std::to_string(f.range->max);
    }
    if (f.zero_is_unset) out += f.default_value ? "; 0: the default" : "; 0: unset";
  }
  return out;
}

std::string requiredText(const FieldSpec& f) {
  switch (f.presence) {
    case Presence::kRequired:
      return "yes";
    case Presence::kConditional:
      return "if " + std::string(f.required_when);
    case Presence::kOptional:
      break;
  }
  return "";
}

std::string row(const FieldSpec& f) {
  const std::string default_text = f.default_value ? code(*f.default_value) : "—";
  const std::string origin = f.origin == Origin::kKturn ? "**kturn**" : "STUNner";
  std::string out = "|";
  for (const std::string& text : {code(f.path), typeName(f), default_text, acceptedText(f),
                                  requiredText(f), origin, f.description}) {
    out.append(" ").append(cell(text)).append(" |");
  }
  return out + "\n";
}

std::string section(std::span<const FieldSpec> schema, const FieldSpec* container) {
  const std::string_view path = container ? container->path : std::string_view();
  std::string fields;
  for (const FieldSpec& f : schema) {
    if (parentPath(f.path) == path) fields += row(f);
  }
  if (fields.empty()) return "";
  std::string heading = "Top level";
  if (container) {
    heading = code(std::string(path) + (container->type == FieldType::kObjectList ? "[]" : ""));
  }
  std::string out = "\n## " + heading + "\n\n";
  if (container) out += container->description + "\n\n";
  out += "| field | type | default | accepted | required | origin | description |\n";
  out += "|---|---|---|---|---|---|---|\n";
  return out + fields;
}

// The container's section, then those of the containers in it, depth first: admin,
// admin.license_config, admin.limits, auth, ...
void appendSections(std::span<const FieldSpec> schema, const FieldSpec* container,
                    std::string& out) {
  out += section(schema, container);
  const std::string_view path = container ? container->path : std::string_view();
  for (const FieldSpec& f : schema) {
    if (isContainer(f.type) && parentPath(f.path) == path) appendSections(schema, &f, out);
  }
}

}  // namespace

std::string renderConfigReference(std::span<const FieldSpec> schema) {
  std::string out(kHeader);
  appendSections(schema, nullptr, out);
  return out;
}

}  // namespace kturn::config
