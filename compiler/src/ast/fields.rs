//! The fields of a `<task>`: text, flags, enumerations, numbers, models, output format,
//! context management and file paths; the nested parts are in [`super::parts`].

use super::build::Builder;
use super::schema;
use super::*;
use crate::diag::Diagnostic;
use crate::parser;
use crate::xml::{Element, Text};
use tv_stdlib::models::{self, Provider};

/// The most `<output_format retries>` may ask again: every attempt costs a model call.
pub const MAX_RETRIES: u32 = 10;

impl Builder<'_> {
    pub(super) fn task_field(&mut self, task: &mut Task, el: &Element) {
        match el.name.as_ref() {
            "description" => task.description = Some(self.text_field(el)),
            "instructions" => task.instructions = Some(self.text_field(el)),
            "system" => task.system = Some(self.text_field(el)),
            "criteria" => task.criteria = Some(Box::new(self.text_field(el))),
            "initial_value" => task.initial_value = Some(Box::new(self.text_field(el))),
            "model" => {
                task.model_settings = Some(Box::new(self.model_settings(el)));
                task.model = self.model(el);
            }
            "provider" => task.provider = self.provider(el).map(Box::new),
            "output_slot" => task.output_slot = Some(Box::new(self.word_field(el))),
            "input_source" => task.input_source = Some(Box::new(self.word_field(el))),
            "output_format" => task.output_format = Some(Box::new(self.output_format(el))),
            "context_management" => task.context = Some(Box::new(self.context_management(el))),
            "file_paths" => task.file_paths = self.file_paths(el).map(Box::new),
            "steps" => task.steps = Some(self.steps(el)),
            "inputs" => task.inputs = self.inputs(el),
            "context_relevance" => task.context_relevance = self.context_relevance(el),
            "context_assembly" => task.context_assembly = Some(Box::new(self.context_assembly(el))),
            "manual_xml" => task.manual_xml = self.bool_field(el),
            "disable_reparsing" => task.disable_reparsing = self.bool_field(el),
            "max_iterations" => task.max_iterations = self.count_field(el),
            "on_max_iterations" => {
                task.on_max_iterations = self.enum_field(
                    el,
                    "on_max_iterations",
                    &[("accept", true), ("fail", false)],
                )
            }
            "subtasks" => {
                task.subtasks =
                    self.enum_field(el, "subtasks", &[("enabled", true), ("disabled", false)])
            }
            "director" => task.director = Some(Box::new(self.slot(el))),
            "evaluator" => task.evaluator = Some(Box::new(self.slot(el))),
            "inner_task" => task.inner_task = Some(Box::new(self.slot(el))),
            "reduction_task" => task.reduction_task = Some(Box::new(self.slot(el))),
            "script_execution" => task.script = Some(Box::new(self.script(el))),
            "termination_condition" => task.termination = Some(Box::new(self.termination(el))),
            _ => {}
        }
    }

    /// Text with `{{ }}` holes.
    pub(super) fn text_field(&mut self, el: &Element) -> TextTemplate {
        schema::check_attrs(el, &[], self.diags);
        schema::no_elements(el, self.diags);
        parser::parse_template(&el.text(), self.diags)
    }

    /// A plain word: no holes, surrounding white space dropped.
    fn word_field(&mut self, el: &Element) -> Spanned<String> {
        schema::check_attrs(el, &[], self.diags);
        schema::no_elements(el, self.diags);
        let t = el.text();
        Spanned::new(t.trimmed().to_string(), t.trimmed_span())
    }

    fn bool_field(&mut self, el: &Element) -> Option<Spanned<bool>> {
        let w = self.word_field(el);
        self.parse_bool(&w, &format!("<{}>", el.name))
    }

    pub(super) fn parse_bool(&mut self, w: &Spanned<String>, what: &str) -> Option<Spanned<bool>> {
        match w.node.as_str() {
            "true" => Some(Spanned::new(true, w.span)),
            "false" => Some(Spanned::new(false, w.span)),
            other => {
                self.diags.push(
                    Diagnostic::error(
                        w.span,
                        format!("`{what}` must be `true` or `false`, not `{other}`"),
                    )
                    .with_help("boolean fields are written exactly `true` or `false`"),
                );
                None
            }
        }
    }

    pub(super) fn count_field(&mut self, el: &Element) -> Option<Spanned<u64>> {
        let w = self.word_field(el);
        self.parse_count(&w, &format!("<{}>", el.name))
    }

    pub(super) fn parse_count(&mut self, w: &Spanned<String>, what: &str) -> Option<Spanned<u64>> {
        match w.node.parse::<u64>() {
            Ok(n) if n > 0 => Some(Spanned::new(n, w.span)),
            _ => {
                self.diags.error(
                    w.span,
                    format!("`{what}` must be a positive whole number, not `{}`", w.node),
                );
                None
            }
        }
    }

    fn enum_field<T: Copy>(
        &mut self,
        el: &Element,
        what: &str,
        options: &[(&str, T)],
    ) -> Option<Spanned<T>> {
        let w = self.word_field(el);
        match options.iter().find(|(n, _)| *n == w.node) {
            Some((_, v)) => Some(Spanned::new(*v, w.span)),
            None => {
                let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
                self.bad_enum(w.span, what, &w.node, &names);
                None
            }
        }
    }

    /// The model identifier; an empty `<model .../>` keeps the run's default model.
    fn model(&mut self, el: &Element) -> Option<Spanned<String>> {
        schema::no_elements(el, self.diags);
        let t = el.text();
        let w = Spanned::new(t.trimmed().to_string(), t.trimmed_span());
        if w.node.is_empty() {
            return None;
        }
        match models::parse_model(&w.node) {
            Err(e) => {
                self.diags.push(
                    Diagnostic::error(w.span, format!("malformed model identifier: {e}"))
                        .with_help("write `provider:model` (openai:gpt-4o-mini) or a known model name (claude-3-5-sonnet-latest)"),
                );
                None
            }
            Ok(m) => {
                if m.provider.is_none() {
                    self.diags.push(
                        Diagnostic::warning(
                            w.span,
                            format!(
                                "unknown model `{}`: no provider can be inferred from its name",
                                m.name
                            ),
                        )
                        .with_help(format!(
                            "name the provider, e.g. `openai:{}` for an OpenAI-compatible server",
                            m.name
                        )),
                    );
                }
                Some(w)
            }
        }
    }

    /// `temperature` 0–2, `top_p` 0–1, `max_tokens` a positive integer, `seed` an
    /// integer, `stop` text or a JSON array of texts: each checked at its attribute.
    fn model_settings(&mut self, el: &Element) -> ModelSettings {
        schema::check_attrs(el, schema::MODEL_ATTRS, self.diags);
        let mut m = ModelSettings {
            span: Some(el.span),
            ..ModelSettings::default()
        };
        for a in &el.attrs {
            let (v, span) = (a.value.trimmed(), a.value.trimmed_span());
            match a.name.as_ref() {
                "temperature" => m.temperature = self.number_in(v, span, "temperature", 2.0),
                "top_p" => m.top_p = self.number_in(v, span, "top_p", 1.0),
                "max_tokens" => {
                    m.max_tokens =
                        self.parse_count(&Spanned::new(v.to_string(), span), "max_tokens")
                }
                "seed" => match v.parse::<i64>() {
                    Ok(n) => m.seed = Some(Spanned::new(n, span)),
                    Err(_) => self
                        .diags
                        .error(span, format!("`seed` must be a whole number, not `{v}`")),
                },
                "stop" => m.stop = self.stop(&a.value.value, a.value.span),
                _ => {}
            }
        }
        m
    }

    /// `stop` (DESIGN §20): the text exactly as written, white space included
    /// (`stop="&#10;"` stops at a newline), or, when it starts with `[`, a JSON array of
    /// 1 to 4 sequences (`stop='["\n", "Observation:"]'`).
    fn stop(&mut self, v: &str, span: Span) -> Option<Spanned<Vec<String>>> {
        let max = tv_vm::bundle::MAX_STOP_SEQUENCES;
        if v.is_empty() {
            self.diags.error(
                span,
                "`stop` must not be empty: it is the text at which the reply ends",
            );
            return None;
        }
        let problem = if !v.starts_with('[') {
            return Some(Spanned::new(vec![v.to_string()], span));
        } else {
            match serde_json::from_str::<Vec<String>>(v) {
                Ok(all) if all.is_empty() || all.len() > max => format!(
                    "`stop` holds {} sequences: give 1 to {max} (OpenAI takes at most {max})",
                    all.len()
                ),
                Ok(all) if all.iter().any(String::is_empty) => {
                    "`stop` holds an empty sequence: each is text at which the reply ends".into()
                }
                Ok(all) => return Some(Spanned::new(all, span)),
                Err(e) => format!("`stop` starts with `[` but is not a JSON array of strings: {e}"),
            }
        };
        self.diags.push(Diagnostic::error(span, problem).with_help(
            "several sequences are a JSON array with JSON's escapes: stop='[\"\\n\", \"Observation:\"]'; a sequence that starts with `[` is written as one: stop='[\"[\"]'",
        ));
        None
    }

    fn number_in(&mut self, v: &str, span: Span, what: &str, max: f64) -> Option<Spanned<f64>> {
        match v.parse::<f64>() {
            Ok(n) if (0.0..=max).contains(&n) => Some(Spanned::new(n, span)),
            _ => {
                self.diags.error(
                    span,
                    format!("`{what}` must be a number from 0 to {max}, not `{v}`"),
                );
                None
            }
        }
    }

    fn provider(&mut self, el: &Element) -> Option<Spanned<String>> {
        let w = self.word_field(el);
        if Provider::parse(&w.node).is_some() {
            return Some(w);
        }
        let names: Vec<&str> = models::PROVIDERS.iter().map(|(n, _)| *n).collect();
        self.bad_enum(w.span, "provider", &w.node, &names);
        None
    }

    fn output_format(&mut self, el: &Element) -> OutputFormat {
        schema::check_attrs(el, schema::OUTPUT_FORMAT_ATTRS, self.diags);
        schema::no_elements(el, self.diags);
        schema::no_text(el, self.diags);
        let kind = match el.attr("type") {
            Some(a) => {
                let v = a.value.trimmed();
                let span = a.value.trimmed_span();
                match v {
                    "json" => Spanned::new(OutputKind::Json, span),
                    "text" => Spanned::new(OutputKind::Text, span),
                    _ => {
                        self.bad_enum(span, "output format type", v, &["json", "text"]);
                        Spanned::new(OutputKind::Text, span)
                    }
                }
            }
            None => {
                self.diags.push(
                    Diagnostic::error(el.head(), "`<output_format>` needs a `type` attribute")
                        .with_help("write type=\"json\" or type=\"text\""),
                );
                Spanned::new(OutputKind::Text, el.head())
            }
        };
        let schema = el
            .attr("schema")
            .and_then(|a| self.type_attr(&a.value, "schema type"));
        if let (Some(s), OutputKind::Text) = (&schema, kind.node) {
            if el.attr("type").is_some_and(|a| a.value.trimmed() == "text") {
                self.diags.push(
                    Diagnostic::error(s.span, "a `schema` applies only to `type=\"json\"` output")
                        .with_help("use type=\"json\" or remove the schema"),
                );
            }
        }
        let retries = el.attr("retries").and_then(|a| self.retries(&a.value));
        if let (Some(r), OutputKind::Text) = (&retries, kind.node) {
            self.diags.push(
                Diagnostic::error(r.span, "`retries` applies only to `type=\"json\"` output")
                    .with_help("text output is never checked, so no reply is asked again; use type=\"json\" with a schema, or remove `retries`"),
            );
        }
        OutputFormat {
            kind,
            schema,
            retries,
            span: el.span,
        }
    }

    /// `retries="N"`: a whole number from 0 to [`MAX_RETRIES`].
    fn retries(&mut self, text: &Text) -> Option<Spanned<u32>> {
        let span = text.trimmed_span();
        match text.trimmed().parse::<u32>() {
            Ok(n) if n <= MAX_RETRIES => Some(Spanned::new(n, span)),
            _ => {
                self.diags.push(
                    Diagnostic::error(
                        span,
                        format!("`retries` is `{}`, not a whole number from 0 to {MAX_RETRIES}", text.trimmed()),
                    )
                    .with_help("retries is how many times a reply that does not fit its type is asked again (default 1)"),
                );
                None
            }
        }
    }

    fn context_management(&mut self, el: &Element) -> ContextManagement {
        schema::check_attrs(el, &[], self.diags);
        schema::no_text(el, self.diags);
        let mut cm = ContextManagement {
            span: el.span,
            ..ContextManagement::default()
        };
        let mut seen: Vec<&Element> = Vec::new();
        for child in el.elements() {
            if let Some(prev) = seen.iter().find(|p| p.name == child.name) {
                self.diags.push(
                    Diagnostic::error(child.head(), format!("`<{}>` is given twice", child.name))
                        .with_secondary(prev.head(), "first given here"),
                );
                continue;
            }
            seen.push(child);
            match child.name.as_ref() {
                "inherit_context" => {
                    cm.inherit_context = self.enum_field(
                        child,
                        "inherit_context",
                        &[
                            ("full", InheritContext::Full),
                            ("none", InheritContext::None),
                            ("subset", InheritContext::Subset),
                        ],
                    )
                }
                "accumulate_data" => cm.accumulate_data = self.bool_field(child),
                "accumulation_format" => {
                    cm.accumulation_format = self.enum_field(
                        child,
                        "accumulation_format",
                        &[
                            ("full", AccumulationFormat::Full),
                            ("full_output", AccumulationFormat::Full),
                            ("minimal", AccumulationFormat::Minimal),
                            ("notes_only", AccumulationFormat::Minimal),
                        ],
                    )
                }
                "fresh_context" => {
                    cm.fresh_context = self.enum_field(
                        child,
                        "fresh_context",
                        &[
                            ("enabled", FreshContext::Enabled),
                            ("disabled", FreshContext::Disabled),
                        ],
                    )
                }
                _ => schema::unknown_element(
                    child,
                    "context_management",
                    schema::CONTEXT_MANAGEMENT_CHILDREN,
                    self.diags,
                ),
            }
        }
        cm
    }

    fn file_paths(&mut self, el: &Element) -> Option<Spanned<FilePaths>> {
        schema::check_attrs(el, schema::FILE_PATHS_ATTRS, self.diags);
        schema::no_text(el, self.diags);
        const SOURCES: [&str; 3] = ["literal", "command", "description"];
        let source = match el.attr("source") {
            Some(a) if SOURCES.contains(&a.value.trimmed()) => Some(a.value.trimmed().to_string()),
            Some(a) => {
                self.bad_enum(
                    a.value.trimmed_span(),
                    "file_paths source",
                    a.value.trimmed(),
                    &SOURCES,
                );
                return None;
            }
            None => None,
        };
        let mut paths = Vec::new();
        let mut command = None;
        let mut description = None;
        for child in el.elements() {
            match child.name.as_ref() {
                "path" => paths.push(self.text_field(child)),
                "command" if command.is_none() => command = Some(self.text_field(child)),
                "description" if description.is_none() => {
                    description = Some(self.text_field(child))
                }
                "command" | "description" => {
                    self.diags
                        .error(child.head(), format!("`<{}>` is given twice", child.name));
                }
                _ => schema::unknown_element(
                    child,
                    "file_paths",
                    schema::FILE_PATHS_CHILDREN,
                    self.diags,
                ),
            }
        }
        let given = usize::from(!paths.is_empty())
            + usize::from(command.is_some())
            + usize::from(description.is_some());
        if given > 1 {
            self.diags.push(
                Diagnostic::error(el.head(), "`<file_paths>` takes `<path>` elements, or one `<command>`, or one `<description>`, not a mix")
                    .with_help("choose one source and say which with source=\"literal|command|description\""),
            );
            return None;
        }
        let fp = match source.as_deref() {
            Some("command") => {
                FilePaths::Command(command.or_else(|| self.missing_source(el, "command"))?)
            }
            Some("description") => FilePaths::Description(
                description.or_else(|| self.missing_source(el, "description"))?,
            ),
            Some(_) if command.is_some() || description.is_some() => {
                self.diags.push(
                    Diagnostic::error(el.head(), "`source=\"literal\"` takes `<path>` elements")
                        .with_help(
                            "set source=\"command\" or source=\"description\" to match the child",
                        ),
                );
                return None;
            }
            _ => match (command, description) {
                (Some(c), _) => FilePaths::Command(c),
                (_, Some(d)) => FilePaths::Description(d),
                _ => FilePaths::Literal(paths),
            },
        };
        Some(Spanned::new(fp, el.span))
    }

    fn missing_source(&mut self, el: &Element, child: &str) -> Option<TextTemplate> {
        self.diags.error(
            el.head(),
            format!("`source=\"{child}\"` needs a `<{child}>` child"),
        );
        None
    }
}
