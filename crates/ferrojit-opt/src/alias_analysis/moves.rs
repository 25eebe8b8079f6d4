//! Moving a node before or after another in the same block without changing what the graph
//! computes (PyTorch's `AliasDb::tryMove`).
//!
//! The node walks toward the move point one node at a time. A node it cannot pass (one that
//! uses its outputs or produces its inputs, or that writes what it reads or reads what it
//! writes) joins a working set that moves along with it. At the move point, the working set
//! must not depend on the move point itself. Nodes with side effects are never passed.

use std::collections::{HashMap, HashSet};

use ferrojit_ir::{Graph, NodeId};

use super::memory_locations::MemoryLocations;
use super::{has_side_effects, AliasDb};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MoveSide {
    Before,
    After,
}

impl AliasDb {
    /// Moves `node` just after `move_point` if that keeps every data and memory dependency,
    /// moving the nodes that depend on it along; returns whether it moved. Both must be in
    /// the same block of the graph this database was built from.
    pub fn move_after_topologically_valid(
        &self,
        graph: &mut Graph,
        node: NodeId,
        move_point: NodeId,
    ) -> bool {
        self.try_move(graph, node, move_point, MoveSide::After, false)
    }

    /// Moves `node` just before `move_point`; see
    /// [`AliasDb::move_after_topologically_valid`].
    pub fn move_before_topologically_valid(
        &self,
        graph: &mut Graph,
        node: NodeId,
        move_point: NodeId,
    ) -> bool {
        self.try_move(graph, node, move_point, MoveSide::Before, false)
    }

    /// Whether [`AliasDb::move_after_topologically_valid`] would move, without moving.
    pub fn could_move_after_topologically(
        &self,
        graph: &mut Graph,
        node: NodeId,
        move_point: NodeId,
    ) -> bool {
        self.try_move(graph, node, move_point, MoveSide::After, true)
    }

    /// Whether [`AliasDb::move_before_topologically_valid`] would move, without moving.
    pub fn could_move_before_topologically(
        &self,
        graph: &mut Graph,
        node: NodeId,
        move_point: NodeId,
    ) -> bool {
        self.try_move(graph, node, move_point, MoveSide::Before, true)
    }

    fn try_move(
        &self,
        graph: &mut Graph,
        to_move: NodeId,
        move_point: NodeId,
        side: MoveSide,
        dry_run: bool,
    ) -> bool {
        let block = graph.node(to_move).owning_block;
        if block.is_none() || block != graph.node(move_point).owning_block {
            return false;
        }
        if to_move == move_point {
            return true;
        }
        let Some(block) = block else { return false };
        let order: Vec<NodeId> = graph.block_nodes(block);
        let position: HashMap<NodeId, usize> =
            order.iter().enumerate().map(|(i, &n)| (n, i)).collect();
        let (Some(&from), Some(&to)) = (position.get(&to_move), position.get(&move_point)) else {
            return false;
        };
        let backwards = from > to;
        let next = |index: usize| if backwards { index - 1 } else { index + 1 };
        let to_move_is_on_move_side = match side {
            MoveSide::Before => from < to,
            MoveSide::After => from > to,
        };
        if to_move_is_on_move_side && next(from) == to {
            return true;
        }
        if has_side_effects(graph, to_move)
            || (!to_move_is_on_move_side && has_side_effects(graph, move_point))
        {
            return false;
        }
        let mut working_set = WorkingSet::new(self, graph, to_move, &position);
        let mut current = next(from);
        while current != to {
            let node = order[current];
            if has_side_effects(graph, node) {
                return false;
            }
            if working_set.depends_on(node) {
                working_set.add(node);
            }
            current = next(current);
        }
        // Moving to the near side of the move point splits the node from its dependencies:
        // they go to the far side, and only they must be able to pass the move point.
        if to_move_is_on_move_side {
            working_set.erase_mover();
        }
        if working_set.depends_on(move_point) {
            return false;
        }
        if dry_run {
            return true;
        }
        let dependents = working_set.nodes.clone();
        let place = |graph: &mut Graph, node: NodeId, anchor: NodeId, side: MoveSide| match side {
            MoveSide::Before => graph.move_before(node, anchor),
            MoveSide::After => graph.move_after(node, anchor),
        };
        if to_move_is_on_move_side {
            place(graph, to_move, move_point, side);
            let reversed = match side {
                MoveSide::Before => MoveSide::After,
                MoveSide::After => MoveSide::Before,
            };
            let mut anchor = move_point;
            for node in dependents {
                place(graph, node, anchor, reversed);
                anchor = node;
            }
        } else {
            place(graph, to_move, move_point, side);
            let mut anchor = to_move;
            for node in dependents {
                place(graph, node, anchor, side);
                anchor = node;
            }
        }
        true
    }
}

/// The node being moved and the nodes that must move with it.
struct WorkingSet<'a> {
    db: &'a AliasDb,
    graph: &'a Graph,
    position: &'a HashMap<NodeId, usize>,
    mover: Option<NodeId>,
    mover_writes: MemoryLocations,
    mover_reads: MemoryLocations,
    mover_users: HashSet<NodeId>,
    nodes: Vec<NodeId>,
    node_set: HashSet<NodeId>,
    users: HashSet<NodeId>,
    writes: MemoryLocations,
    reads: MemoryLocations,
}

impl<'a> WorkingSet<'a> {
    fn new(
        db: &'a AliasDb,
        graph: &'a Graph,
        mover: NodeId,
        position: &'a HashMap<NodeId, usize>,
    ) -> WorkingSet<'a> {
        WorkingSet {
            db,
            graph,
            position,
            mover: Some(mover),
            mover_writes: db.writes_of(graph, mover),
            mover_reads: db.reads_of(graph, mover),
            mover_users: users_in_same_block(graph, mover),
            nodes: Vec::new(),
            node_set: HashSet::new(),
            users: HashSet::new(),
            writes: MemoryLocations::default(),
            reads: MemoryLocations::default(),
        }
    }

    fn add(&mut self, node: NodeId) {
        self.nodes.push(node);
        self.node_set.insert(node);
        self.users.extend(users_in_same_block(self.graph, node));
        self.writes.union_with(&self.db.writes_of(self.graph, node));
        self.reads.union_with(&self.db.reads_of(self.graph, node));
    }

    fn erase_mover(&mut self) {
        self.mover = None;
        self.mover_writes = MemoryLocations::default();
        self.mover_reads = MemoryLocations::default();
        self.mover_users.clear();
    }

    fn depends_on(&self, node: NodeId) -> bool {
        if self.mover.is_none() && self.nodes.is_empty() {
            return false;
        }
        self.has_data_dependency(node) || self.has_mutability_dependency(node)
    }

    fn has_data_dependency(&self, node: NodeId) -> bool {
        let Some(pivot) = self.mover.or_else(|| self.nodes.first().copied()) else {
            return false;
        };
        if self.position.get(&node) > self.position.get(&pivot) {
            // Does the working set produce a value `node` uses?
            (self.mover.is_some() && self.mover_users.contains(&node)) || self.users.contains(&node)
        } else {
            // Does the working set use a value `node` produces?
            let users = users_in_same_block(self.graph, node);
            self.mover.is_some_and(|mover| users.contains(&mover))
                || users.iter().any(|user| self.node_set.contains(user))
        }
    }

    fn has_mutability_dependency(&self, node: NodeId) -> bool {
        let node_writes = self.db.writes_of(self.graph, node);
        if self.reads.intersects(&node_writes)
            || (self.mover.is_some() && self.mover_reads.intersects(&node_writes))
        {
            return true;
        }
        let node_reads = self.db.reads_of(self.graph, node);
        self.writes.intersects(&node_reads)
            || (self.mover.is_some() && self.mover_writes.intersects(&node_reads))
    }
}

/// The nodes of `node`'s block that use its outputs; a use inside a nested block counts as
/// a use by the node of `node`'s block that holds it.
fn users_in_same_block(graph: &Graph, node: NodeId) -> HashSet<NodeId> {
    let block = graph.node(node).owning_block;
    let mut users = HashSet::new();
    for &output in graph.node_outputs(node) {
        for use_ in graph.value_uses(output) {
            let mut user = use_.node;
            loop {
                let user_block = graph.node(user).owning_block;
                if user_block == block {
                    users.insert(user);
                    break;
                }
                match user_block.and_then(|b| graph.block_owning_node(b)) {
                    Some(owner) => user = owner,
                    None => break,
                }
            }
        }
    }
    users
}
