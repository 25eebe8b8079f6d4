//! The memory DAG under [`super::AliasDb`]: elements, points-to and contains edges, and the
//! memory locations each element may refer to, as PyTorch's `MemoryDAG` computes them.
//!
//! An element stands for a value of a mutable type (or for the wildcard of one type). An
//! element that points to nothing is a memory location itself; any other element's memory
//! locations are those of the elements it points to. Containment (a list holding tensors) is
//! a separate edge: "may contain an alias" follows both kinds of edge.

use std::cell::OnceCell;

use ferrojit_ir::ValueId;

/// The index of one element of the memory DAG.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ElementId(pub u32);

impl ElementId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A set of memory locations (element indices), as a bit set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryLocations {
    words: Vec<u64>,
}

impl MemoryLocations {
    pub fn insert(&mut self, element: ElementId) {
        let (word, bit) = (element.index() / 64, element.index() % 64);
        if self.words.len() <= word {
            self.words.resize(word + 1, 0);
        }
        self.words[word] |= 1 << bit;
    }

    pub fn contains(&self, element: ElementId) -> bool {
        let (word, bit) = (element.index() / 64, element.index() % 64);
        self.words.get(word).is_some_and(|w| w & (1 << bit) != 0)
    }

    pub fn union_with(&mut self, other: &MemoryLocations) {
        if self.words.len() < other.words.len() {
            self.words.resize(other.words.len(), 0);
        }
        for (mine, theirs) in self.words.iter_mut().zip(&other.words) {
            *mine |= theirs;
        }
    }

    pub fn intersects(&self, other: &MemoryLocations) -> bool {
        self.words
            .iter()
            .zip(&other.words)
            .any(|(mine, theirs)| mine & theirs != 0)
    }

    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// The elements in the set, in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = ElementId> + '_ {
        self.words
            .iter()
            .enumerate()
            .flat_map(|(word_index, &word)| {
                (0..64)
                    .filter(move |bit| word & (1u64 << bit) != 0)
                    .map(move |bit| ElementId((word_index * 64 + bit) as u32))
            })
    }
}

/// One element: the values it stands for (none for a wildcard), what it points to and what
/// it contains.
#[derive(Debug, Clone, Default)]
pub struct Element {
    pub values: Vec<ValueId>,
    pub points_to: Vec<ElementId>,
    pub contained: Vec<ElementId>,
}

/// Builds the DAG during analysis; [`MemoryDagBuilder::finish`] freezes it.
#[derive(Debug, Default)]
pub struct MemoryDagBuilder {
    elements: Vec<Element>,
}

impl MemoryDagBuilder {
    /// A new element standing for `value` (or a wildcard when `None`), pointing to nothing.
    pub fn make_fresh(&mut self, value: Option<ValueId>) -> ElementId {
        let id = ElementId(self.elements.len() as u32);
        self.elements.push(Element {
            values: value.into_iter().collect(),
            ..Element::default()
        });
        id
    }

    pub fn make_pointer_to(&mut self, from: ElementId, to: ElementId) {
        let points_to = &mut self.elements[from.index()].points_to;
        if !points_to.contains(&to) {
            points_to.push(to);
        }
    }

    pub fn add_to_contained(&mut self, element: ElementId, container: ElementId) {
        let contained = &mut self.elements[container.index()].contained;
        if !contained.contains(&element) {
            contained.push(element);
        }
    }

    /// Freezes the DAG. `wildcard_sources` pairs each wildcard element with the elements of
    /// the values marked as that wildcard: each of their memory locations comes to point at
    /// the wildcard, and every element sharing such a location may then alias the wildcard
    /// too (PyTorch's `MemoryDAG::setWildcards`).
    pub fn finish(mut self, wildcard_sources: &[(ElementId, ElementId)]) -> MemoryDag {
        let base = base_locations(&self.elements);
        // For each wildcard, the memory locations of every value set to it.
        let mut pointees: Vec<(ElementId, MemoryLocations)> = Vec::new();
        for &(wildcard, source) in wildcard_sources {
            let locations = &base[source.index()];
            match pointees.iter_mut().find(|(w, _)| *w == wildcard) {
                Some((_, set)) => set.union_with(locations),
                None => pointees.push((wildcard, locations.clone())),
            }
        }
        for (wildcard, set) in &pointees {
            for location in set.iter() {
                self.make_pointer_to(location, *wildcard);
            }
        }
        let locations = base
            .into_iter()
            .map(|mut locations| {
                let extra: Vec<ElementId> = pointees
                    .iter()
                    .filter(|(_, set)| set.intersects(&locations))
                    .map(|(wildcard, _)| *wildcard)
                    .collect();
                for wildcard in extra {
                    locations.insert(wildcard);
                }
                locations
            })
            .collect();
        let all_contained = (0..self.elements.len()).map(|_| OnceCell::new()).collect();
        MemoryDag {
            elements: self.elements,
            locations,
            all_contained,
        }
    }
}

/// The memory locations of every element before wildcards are applied: itself when it
/// points to nothing, else the union over what it points to. Iterative, and a cycle (which
/// well-formed graphs never make) ends at the element met twice rather than looping.
fn base_locations(elements: &[Element]) -> Vec<MemoryLocations> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Unvisited,
        InProgress,
        Done,
    }
    let mut state = vec![State::Unvisited; elements.len()];
    let mut result = vec![MemoryLocations::default(); elements.len()];
    for root in 0..elements.len() {
        if state[root] != State::Unvisited {
            continue;
        }
        let mut stack: Vec<(usize, bool)> = vec![(root, false)];
        while let Some((index, expanded)) = stack.pop() {
            if expanded {
                let element = &elements[index];
                let mut locations = MemoryLocations::default();
                if element.points_to.is_empty() {
                    locations.insert(ElementId(index as u32));
                } else {
                    for target in &element.points_to {
                        locations.union_with(&result[target.index()]);
                    }
                }
                result[index] = locations;
                state[index] = State::Done;
                continue;
            }
            if state[index] != State::Unvisited {
                continue;
            }
            state[index] = State::InProgress;
            stack.push((index, true));
            for target in &elements[index].points_to {
                if state[target.index()] == State::Unvisited {
                    stack.push((target.index(), false));
                }
            }
        }
    }
    result
}

/// The frozen DAG, with every element's memory locations computed.
#[derive(Debug)]
pub struct MemoryDag {
    elements: Vec<Element>,
    locations: Vec<MemoryLocations>,
    all_contained: Vec<OnceCell<MemoryLocations>>,
}

impl MemoryDag {
    pub fn element(&self, element: ElementId) -> &Element {
        &self.elements[element.index()]
    }

    pub fn len(&self) -> usize {
        self.elements.len()
    }

    pub fn is_empty(&self) -> bool {
        self.elements.is_empty()
    }

    /// The memory locations `element` may refer to.
    pub fn memory_locations(&self, element: ElementId) -> &MemoryLocations {
        &self.locations[element.index()]
    }

    pub fn may_alias(&self, a: ElementId, b: ElementId) -> bool {
        self.memory_locations(a)
            .intersects(self.memory_locations(b))
    }

    /// The element itself, its memory locations, and everything contained in any of them,
    /// transitively (PyTorch's `getAllContainedMemoryLocations`).
    pub fn all_contained_memory_locations(&self, element: ElementId) -> &MemoryLocations {
        self.all_contained[element.index()].get_or_init(|| {
            let mut seen = MemoryLocations::default();
            let mut stack = vec![element];
            while let Some(current) = stack.pop() {
                if seen.contains(current) {
                    continue;
                }
                seen.insert(current);
                stack.extend(self.memory_locations(current).iter());
                stack.extend(self.elements[current.index()].contained.iter().copied());
            }
            seen
        })
    }

    pub fn may_contain_alias(&self, a: ElementId, b: ElementId) -> bool {
        self.all_contained_memory_locations(a)
            .intersects(self.all_contained_memory_locations(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_follow_pointers_and_wildcards_join_shared_locations() {
        let mut builder = MemoryDagBuilder::default();
        let x = builder.make_fresh(None);
        let view = builder.make_fresh(None);
        let other = builder.make_fresh(None);
        let wildcard = builder.make_fresh(None);
        builder.make_pointer_to(view, x);
        let dag = builder.finish(&[(wildcard, x)]);
        assert!(dag.may_alias(view, x));
        assert!(dag.may_alias(view, wildcard));
        assert!(!dag.may_alias(other, x));
        assert!(dag.memory_locations(view).contains(x));
    }

    #[test]
    fn a_pointer_cycle_terminates() {
        let mut builder = MemoryDagBuilder::default();
        let a = builder.make_fresh(None);
        let b = builder.make_fresh(None);
        builder.make_pointer_to(a, b);
        builder.make_pointer_to(b, a);
        let dag = builder.finish(&[]);
        let _ = dag.may_contain_alias(a, b);
    }
}
