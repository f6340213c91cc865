//! What the later stages read of an item that is not held: `tvc compile` of a large
//! program builds its items again from the file a window at a time
//! (`crate::driver::check_paths_outlined`), keeping only their heads between.

use super::{Body, Ident, InheritContext, Item, Module};

impl Item {
    /// Whether its task states `inherit_context` full or subset: it takes its
    /// caller's context as a last parameter.
    pub fn inherits_context(&self) -> bool {
        let task = match self {
            Item::Template(t) => match &t.body {
                Body::Task(task) => task,
                _ => return false,
            },
            Item::Task(t) => &t.task,
        };
        task.context
            .as_ref()
            .and_then(|c| c.inherit_context.as_ref())
            .is_some_and(|i| i.node != InheritContext::None)
    }
}

/// What lowering reads of an item besides its own tree: its name and whether it
/// takes its caller's context.
#[derive(Clone, Debug)]
pub struct Head {
    pub name: Ident,
    pub inherits_context: bool,
}

impl Head {
    pub fn of(item: &Item) -> Head {
        Head {
            name: item.name().clone(),
            inherits_context: item.inherits_context(),
        }
    }
}

impl Module {
    /// Its items' names, in order, whether the items are held or not.
    pub fn names(&self) -> Box<dyn Iterator<Item = &Ident> + '_> {
        match &self.heads {
            Some(heads) => Box::new(heads.iter().map(|h| &h.name)),
            None => Box::new(self.items.iter().map(Item::name)),
        }
    }

    /// The name of its item at `place`, whether the items are held or not.
    pub fn name_at(&self, place: usize) -> Option<&Ident> {
        match &self.heads {
            Some(heads) => heads.get(place).map(|h| &h.name),
            None => self.items.get(place).map(Item::name),
        }
    }
}
