//! The XML Schema (XSD 1.0) of the template language, which `tvc schema` prints so that
//! XML editors complete and validate templates (DESIGN §17).
//!
//! The schema is a file of its own, `template.xsd` beside this module, so that it reads
//! as a schema; it is compiled in as text. Its tests keep it in step with the compiler:
//! each element of the schema has the attributes and children the compiler's lists
//! (`ast/schema.rs`) give it, and the shipped examples and fixtures validate against it
//! (`tests/xsd.rs` at the workspace root, with `xmllint`).

/// The schema, as `tvc schema` prints it.
pub const TEMPLATE_XSD: &str = include_str!("template.xsd");

// The schema against the compiler's own lists: every element the schema declares has
// exactly the attributes and children the compiler accepts there, so an element or
// attribute added to the compiler without the schema (or the other way round) fails here.
#[cfg(test)]
mod tests {
    use super::TEMPLATE_XSD;
    use crate::ast::schema::*;
    use crate::ast::{TaskType, MAX_RETRIES};
    use quick_xml::events::{BytesStart, Event};
    use quick_xml::Reader;
    use std::collections::{BTreeMap, BTreeSet};
    use tv_stdlib::models::PROVIDERS;
    use tv_vm::limits::MAX_CONCURRENCY;

    /// The slots written as a task (`<director type="map">`): a task's children and the
    /// attributes of a task but its name.
    const SLOTS: &[&str] = &["director", "evaluator", "inner_task", "reduction_task"];

    /// Elements in the schema that the compiler does not read yet: a library's `<test>`
    /// (DESIGN §17), run by `tvm test`. Neither it nor its children are compared.
    const NOT_IN_THE_COMPILER: &[&str] = &[];

    /// One element of the schema document: its local name (`element` for `xs:element`),
    /// attributes and child elements.
    #[derive(Debug)]
    struct Node {
        name: String,
        attrs: Vec<(String, String)>,
        children: Vec<Node>,
    }

    impl Node {
        fn attr(&self, name: &str) -> Option<&str> {
            self.attrs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        }

        fn open(e: &BytesStart) -> Node {
            Node {
                name: e.local_name().as_ref().to_string(),
                // The schema's attribute values hold no references: taken as written.
                attrs: e
                    .attributes()
                    .map(|a| {
                        let a = a.expect("a well-formed attribute");
                        (a.key.as_ref().to_string(), a.value.to_string())
                    })
                    .collect(),
                children: Vec::new(),
            }
        }
    }

    fn parse(text: &str) -> Node {
        let mut reader = Reader::from_str(text);
        let mut stack = vec![Node {
            name: "#document".into(),
            attrs: Vec::new(),
            children: Vec::new(),
        }];
        loop {
            match reader.read_event().expect("the schema is well-formed XML") {
                Event::Start(e) => stack.push(Node::open(&e)),
                Event::Empty(e) => {
                    let node = Node::open(&e);
                    stack.last_mut().expect("open").children.push(node);
                }
                Event::End(_) => {
                    let node = stack.pop().expect("open");
                    stack.last_mut().expect("a parent").children.push(node);
                }
                Event::Eof => break,
                _ => {}
            }
        }
        let mut doc = stack.pop().expect("the document");
        assert_eq!(doc.children.len(), 1, "one root");
        doc.children.remove(0)
    }

    /// What the schema lets an element hold, by `parent/element` (`/task` for a root).
    #[derive(Default)]
    struct Allowed {
        attrs: BTreeMap<String, BTreeSet<String>>,
        children: BTreeMap<String, BTreeSet<String>>,
    }

    /// The schema's named definitions, and what each element declaration allows.
    struct Schema<'x> {
        defs: BTreeMap<(&'x str, &'x str), &'x Node>,
        allowed: Allowed,
        seen: BTreeSet<(String, *const Node)>,
    }

    impl<'x> Schema<'x> {
        fn new(root: &'x Node) -> Schema<'x> {
            let mut defs = BTreeMap::new();
            for def in &root.children {
                if let Some(name) = def.attr("name") {
                    defs.insert((def.name.as_str(), name), def);
                }
            }
            Schema {
                defs,
                allowed: Allowed::default(),
                seen: BTreeSet::new(),
            }
        }

        fn def(&self, kind: &str, name: &str) -> &'x Node {
            self.defs
                .get(&(kind, name))
                .unwrap_or_else(|| panic!("the schema has no {kind} `{name}`"))
        }

        /// Records what the element declared by `decl` allows under `parent`, then its children.
        fn visit(&mut self, parent: &str, decl: &'x Node) {
            let decl = match decl.attr("ref") {
                Some(r) => self.def("element", r),
                None => decl,
            };
            let name = decl.attr("name").expect("an element has a name");
            let key = format!("{parent}/{name}");
            if !self.seen.insert((key.clone(), decl as *const Node)) {
                return;
            }
            let mut attrs = BTreeSet::new();
            let mut children = Vec::new();
            match decl.attr("type").filter(|t| !t.starts_with("xs:")) {
                Some(t) => match self.defs.get(&("complexType", t)) {
                    Some(ty) => self.content(ty, &mut attrs, &mut children),
                    None => assert!(self.defs.contains_key(&("simpleType", t)), "no type `{t}`"),
                },
                None => self.content(decl, &mut attrs, &mut children),
            }
            let names: Vec<String> = children.iter().map(|c| self.name_of(c)).collect();
            self.allowed
                .children
                .entry(key.clone())
                .or_default()
                .extend(names);
            self.allowed.attrs.entry(key).or_default().extend(attrs);
            for child in children {
                self.visit(name, child);
            }
        }

        fn name_of(&self, decl: &'x Node) -> String {
            decl.attr("ref")
                .or(decl.attr("name"))
                .expect("a name")
                .to_string()
        }

        /// The attributes and child element declarations below `node`, through references
        /// to groups, attribute groups and base types.
        fn content(&self, node: &'x Node, attrs: &mut BTreeSet<String>, out: &mut Vec<&'x Node>) {
            for c in &node.children {
                match (c.name.as_str(), c.attr("ref")) {
                    ("element", _) => out.push(c),
                    ("attribute", _) => {
                        attrs.insert(c.attr("name").expect("an attribute's name").into());
                    }
                    ("group", Some(r)) => self.content(self.def("group", r), attrs, out),
                    ("attributeGroup", Some(r)) => {
                        self.content(self.def("attributeGroup", r), attrs, out)
                    }
                    ("extension" | "restriction", _) => {
                        let base = c.attr("base").expect("a base");
                        if let Some(ty) = self.defs.get(&("complexType", base)) {
                            self.content(ty, attrs, out);
                        }
                        self.content(c, attrs, out);
                    }
                    ("annotation", _) => {}
                    _ => self.content(c, attrs, out),
                }
            }
        }
    }

    fn allowed() -> Allowed {
        let root = parse(TEMPLATE_XSD);
        let mut schema = Schema::new(&root);
        for top in root.children.iter().filter(|c| c.name == "element") {
            schema.visit("", top);
        }
        schema.allowed
    }

    /// The attributes the compiler accepts on `el` inside `parent`.
    fn compiler_attrs(parent: &str, el: &str) -> &'static [&'static str] {
        match (parent, el) {
            (_, "task") => TASK_ATTRS,
            (_, slot) if SLOTS.contains(&slot) => SLOT_ATTRS,
            (_, "template") => TEMPLATE_ATTRS,
            (_, "call") => CALL_ATTRS,
            ("call", "arg") => ARG_ATTRS,
            ("cond", "case") => CASE_ATTRS,
            (_, "cond") => COND_ATTRS,
            ("library", "type") => TYPE_ATTRS,
            (_, "model") => MODEL_ATTRS,
            (_, "output_format") => OUTPUT_FORMAT_ATTRS,
            (_, "file_paths") => FILE_PATHS_ATTRS,
            ("inputs", "input") => INPUT_ATTRS,
            ("context_relevance", "input") => RELEVANCE_ATTRS,
            ("library", "test") => TEST_ATTRS,
            ("test", "arg") => TEST_ARG_ATTRS,
            ("test", "reply") => REPLY_ATTRS,
            ("test", "cassette") => CASSETTE_ATTRS,
            ("test", "expect") => EXPECT_ATTRS,
            _ => &[],
        }
    }

    /// The child elements the compiler accepts in `el` inside `parent`.
    fn compiler_children(parent: &str, el: &str) -> Vec<&'static str> {
        match (parent, el) {
            (_, "task") => [TASK_CHILDREN, BODY_ELEMENTS].concat(),
            (_, slot) if SLOTS.contains(&slot) => [TASK_CHILDREN, BODY_ELEMENTS].concat(),
            (_, "library") => [LIBRARY_CHILDREN, NOT_IN_THE_COMPILER].concat(),
            ("library", "test") => TEST_CHILDREN.to_vec(),
            (_, "template" | "steps")
            | ("cond", "case")
            | ("inputs", "input")
            | ("call", "arg") => BODY_ELEMENTS.to_vec(),
            (_, "call") => vec!["arg"],
            (_, "cond") => vec!["case"],
            (_, "inputs" | "context_relevance") => vec!["input"],
            (_, "context_management") => CONTEXT_MANAGEMENT_CHILDREN.to_vec(),
            (_, "file_paths") => FILE_PATHS_CHILDREN.to_vec(),
            (_, "context_assembly") => CONTEXT_ASSEMBLY_CHILDREN.to_vec(),
            (_, "script_execution") => SCRIPT_CHILDREN.to_vec(),
            (_, "termination_condition") => vec!["condition"],
            _ => Vec::new(),
        }
    }

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    /// The differences between what the schema allows (`parent/element` → names) and what
    /// the compiler accepts, one line per element and difference, naming the parents.
    fn differences(
        allowed: &BTreeMap<String, BTreeSet<String>>,
        compiler: impl Fn(&str, &str) -> BTreeSet<String>,
    ) -> String {
        let mut found: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        for (key, names) in allowed {
            let (parent, el) = key.rsplit_once('/').expect("parent/element");
            if NOT_IN_THE_COMPILER.contains(&el) || NOT_IN_THE_COMPILER.contains(&parent) {
                continue;
            }
            let expected = compiler(parent, el);
            if *names == expected {
                continue;
            }
            let only_schema: Vec<_> = names.difference(&expected).collect();
            let only_compiler: Vec<_> = expected.difference(names).collect();
            let line = format!(
                "<{el}>: only in the schema {only_schema:?}, only in the compiler {only_compiler:?}"
            );
            found.entry(line).or_default().push(parent);
        }
        let lines: Vec<String> = found
            .into_iter()
            .map(|(line, parents)| format!("{line} (in {})", parents.join(", ")))
            .collect();
        lines.join("\n")
    }

    #[test]
    fn every_element_of_the_schema_has_the_attributes_the_compiler_accepts_there() {
        let wrong = differences(&allowed().attrs, |p, e| set(compiler_attrs(p, e)));
        assert!(wrong.is_empty(), "{wrong}");
    }

    #[test]
    fn every_element_of_the_schema_has_the_children_the_compiler_accepts_there() {
        let allowed = allowed();
        let wrong = differences(&allowed.children, |p, e| set(&compiler_children(p, e)));
        assert!(wrong.is_empty(), "{wrong}");
        // The lists' every element is reached, so none was left unchecked.
        for name in TASK_CHILDREN.iter().chain(LIBRARY_CHILDREN) {
            assert!(
                allowed
                    .children
                    .keys()
                    .any(|k| k.ends_with(&format!("/{name}"))),
                "`{name}` is not in the schema"
            );
        }
    }

    #[test]
    fn a_file_may_start_with_a_task_a_template_or_a_library_and_nothing_else() {
        let root = parse(TEMPLATE_XSD);
        let roots: BTreeSet<String> = root
            .children
            .iter()
            .filter(|c| c.name == "element")
            .filter_map(|c| c.attr("name").map(String::from))
            .collect();
        assert_eq!(roots, set(&["library", "task", "template"]));
    }

    /// The facets of a named simple type: its enumeration values, its `maxInclusive`.
    fn facets(name: &str, facet: &str) -> Vec<String> {
        let root = parse(TEMPLATE_XSD);
        let ty = root
            .children
            .iter()
            .find(|c| c.name == "simpleType" && c.attr("name") == Some(name))
            .unwrap_or_else(|| panic!("no simple type {name}"));
        let restriction = ty
            .children
            .iter()
            .find(|c| c.name == "restriction")
            .expect("a restriction");
        restriction
            .children
            .iter()
            .filter(|c| c.name == facet)
            .filter_map(|c| c.attr("value").map(String::from))
            .collect()
    }

    #[test]
    fn the_schemas_word_lists_and_limits_are_the_compilers() {
        let types: Vec<&str> = TaskType::ALL.iter().map(|(n, _)| *n).collect();
        assert_eq!(facets("TaskType", "enumeration"), types);
        let providers: Vec<&str> = PROVIDERS.iter().map(|(n, _)| *n).collect();
        assert_eq!(facets("Provider", "enumeration"), providers);
        assert_eq!(facets("Retries", "maxInclusive"), [MAX_RETRIES.to_string()]);
        let most = MAX_CONCURRENCY.to_string();
        assert_eq!(facets("Concurrency", "maxInclusive"), [most]);
    }

    #[test]
    fn every_declared_element_has_a_line_of_documentation_for_editors_to_show() {
        fn walk(node: &Node, missing: &mut Vec<String>) {
            if node.name == "element" && node.attr("ref").is_none() {
                let documented = node
                    .children
                    .iter()
                    .filter(|c| c.name == "annotation")
                    .any(|a| a.children.iter().any(|d| d.name == "documentation"));
                if !documented {
                    missing.push(node.attr("name").unwrap_or("?").to_string());
                }
            }
            for c in &node.children {
                walk(c, missing);
            }
        }
        let mut missing = Vec::new();
        walk(&parse(TEMPLATE_XSD), &mut missing);
        assert!(missing.is_empty(), "undocumented: {missing:?}");
    }
}
