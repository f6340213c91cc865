//! Standard templates: written in the template language itself and linked into a
//! program when it calls them. A user template may not take one of their names.

/// `(path, source)` of every standard template; the path is how diagnostics name it.
pub const TEMPLATES: &[(&str, &str)] = &[
    (
        "std/repair_json.xml",
        include_str!("../templates/repair_json.xml"),
    ),
    (
        "std/evaluate_output.xml",
        include_str!("../templates/evaluate_output.xml"),
    ),
];
