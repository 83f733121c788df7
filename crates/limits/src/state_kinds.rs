//! What a rule keeps per key, sized for the rule: one rate's state inline
//! (a token bucket's is 16 bytes), several rates' behind one pointer. A
//! [`KeyState`] is as large as the largest inline kind, so that is kept
//! small. The keyed table of a single-rate rule keeps its algorithm's state
//! alone ([`Inline`] converts it), so its keys do not pay for the largest.

use crate::algorithms::RateAlgorithm;

/// What a rule keeps for one key: one state per rate.
///
/// A single-rate rule's state is kept inline (32 bytes, the largest being
/// the sliding window's counters and the sliding log's ring); several rates'
/// states live in one allocation. Every key's state is as large as the
/// largest inline kind, so that kinds share one slot type.
#[derive(Clone, Debug)]
pub struct KeyState(pub(crate) StateKind);

/// The one list of the per-rate algorithms a rule can run, as
/// `Kind(engine type)`. From it come `Engines` (a rule's per-rate
/// algorithms), `StateKind` (a key's states), `ManyStates` (those of a rule
/// with several rates), `StatesRef` (either, as a slice) and
/// `with_engines!`, so that a new algorithm is one more entry here (and one
/// arm in `Rule::build_engines`). `$d` is a literal `$`, passed in so that
/// the generated macro can have metavariables of its own.
macro_rules! rule_kinds {
    ($d:tt $($kind:ident($engine:ty)),+ $(,)?) => {
        /// The per-rate algorithms of a rule.
        #[derive(Clone, Debug)]
        pub(crate) enum Engines {
            $($kind(Vec<$engine>),)+
        }

        /// A key's states, of the kind of rule that made them: one rate's
        /// inline, or several rates' behind one pointer.
        #[derive(Clone, Debug)]
        pub(crate) enum StateKind {
            $($kind(<$engine as RateAlgorithm>::State),)+
            Many(Box<ManyStates>),
        }

        /// The states of a rule with several rates, one per rate.
        #[derive(Clone, Debug)]
        pub(crate) enum ManyStates {
            $($kind(Box<[<$engine as RateAlgorithm>::State]>),)+
        }

        /// A key's per-rate states as a slice, whichever way they are kept.
        pub(crate) enum StatesRef<'a> {
            $($kind(&'a [<$engine as RateAlgorithm>::State]),)+
        }

        /// Runs `$body` with `$e` bound to the rule's per-rate algorithms
        /// and `$s` to the matching per-rate states (a mutable slice);
        /// `$other` when the state belongs to another kind of rule.
        macro_rules! with_engines {
            (
                $d engines:expr, $d state:expr, |$d e:ident, $d s:ident| $d body:expr, $d other:expr
            ) => {
                match ($d engines, $d state) {
                    $((crate::state_kinds::Engines::$kind($d e), crate::state_kinds::StateKind::$kind(one)) => {
                        let $d s = std::slice::from_mut(one);
                        $d body
                    })+
                    (engines, crate::state_kinds::StateKind::Many(many)) => match (engines, &mut **many) {
                        $((crate::state_kinds::Engines::$kind($d e), crate::state_kinds::ManyStates::$kind(all)) => {
                            let $d s = &mut all[..];
                            $d body
                        })+
                        #[allow(unreachable_patterns)]
                        _ => $d other,
                    },
                    #[allow(unreachable_patterns)]
                    _ => $d other,
                }
            };
        }
        pub(crate) use with_engines;

        /// Runs `$body` with `$e` bound to the one algorithm of a
        /// single-rate rule and `$pick` to a function that gives a key's
        /// state of that kind (`None` for a state of another shape): one
        /// dispatch on the rule for many states, as the sweep needs.
        /// `$other` for a rule with several rates.
        macro_rules! with_one_engine {
            (
                $d engines:expr, |$d e:ident, $d pick:ident| $d body:expr, $d other:expr
            ) => {
                match $d engines {
                    $(crate::state_kinds::Engines::$kind(all) if all.len() == 1 => {
                        let $d e = &all[0];
                        #[inline]
                        fn $d pick(
                            s: &mut crate::state_kinds::StateKind,
                        ) -> Option<&mut <$engine as RateAlgorithm>::State> {
                            match s {
                                crate::state_kinds::StateKind::$kind(one) => Some(one),
                                #[allow(unreachable_patterns)]
                                _ => None,
                            }
                        }
                        $d body
                    })+
                    _ => $d other,
                }
            };
        }
        pub(crate) use with_one_engine;

        impl Engines {
            /// The largest cost that can ever pass: the smallest capacity.
            pub(crate) fn max_cost(&self) -> u64 {
                match self {
                    $(Engines::$kind(e) => e.iter().map(RateAlgorithm::capacity).min(),)+
                }
                .unwrap_or(u64::MAX)
            }

            /// The states of a key never seen: one rate's made inline, not
            /// boxed and unboxed (an allocation and a free on every check
            /// that meets an idle key again).
            pub(crate) fn new_state(&self) -> StateKind {
                match self {
                    $(Engines::$kind(e) if e.len() == 1 => {
                        StateKind::$kind(Default::default())
                    })+
                    $(Engines::$kind(e) => StateKind::from_many(ManyStates::$kind(
                        e.iter().map(|_| Default::default()).collect(),
                    )),)+
                }
            }

            /// Whether `state` was made by a rule of this shape.
            pub(crate) fn owns(&self, state: &StateKind) -> bool {
                match (self, state) {
                    $((Engines::$kind(e), StateKind::$kind(..)) => e.len() == 1,)+
                    (_, StateKind::Many(..)) => self.owns_many(state),
                    #[allow(unreachable_patterns)]
                    _ => false,
                }
            }

            /// [`owns`](Self::owns) for the states of several rates.
            fn owns_many(&self, state: &StateKind) -> bool {
                match (self, state.view()) {
                    $((Engines::$kind(e), StatesRef::$kind(s)) => e.len() == s.len(),)+
                    #[allow(unreachable_patterns)]
                    _ => false,
                }
            }
        }

        $(impl Inline for $engine {
            fn into_key_state(state: Self::State) -> KeyState {
                KeyState(StateKind::$kind(state))
            }

            fn from_key_state(state: KeyState) -> Option<Self::State> {
                match state.0 {
                    StateKind::$kind(one) => Some(one),
                    #[allow(unreachable_patterns)]
                    _ => None,
                }
            }
        })+

        impl StateKind {
            /// Several rates' states, or one rate's inline.
            pub(crate) fn from_many(many: ManyStates) -> StateKind {
                match many {
                    $(ManyStates::$kind(s) if s.len() == 1 => {
                        let [one] = <Box<[_; 1]>>::try_from(s).map_or_else(
                            |_| unreachable!("one state"),
                            |one| *one,
                        );
                        StateKind::$kind(one)
                    })+
                    many => StateKind::Many(Box::new(many)),
                }
            }

            /// The per-rate states as a slice.
            pub(crate) fn view(&self) -> StatesRef<'_> {
                match self {
                    $(StateKind::$kind(one) => StatesRef::$kind(std::slice::from_ref(one)),)+
                    StateKind::Many(many) => match &**many {
                        $(ManyStates::$kind(all) => StatesRef::$kind(all),)+
                    },
                }
            }

            /// Heap bytes beyond the inline size.
            pub(crate) fn heap_bytes(&self) -> usize {
                let outer = match self {
                    StateKind::Many(many) => std::mem::size_of::<ManyStates>() + match &**many {
                        $(ManyStates::$kind(all) => std::mem::size_of_val::<[_]>(all),)+
                    },
                    _ => 0,
                };
                outer + match self.view() {
                    $(StatesRef::$kind(s) => s.iter().map(<$engine>::heap_bytes).sum::<usize>(),)+
                }
            }
        }
    };
}

/// A per-rate algorithm whose state a single-rate rule keeps inline: the
/// keyed table of such a rule keeps that state alone, sized for it (see
/// `keyed/kind.rs`), and goes through a [`KeyState`] only to save or load it.
pub(crate) trait Inline: RateAlgorithm {
    /// A single-rate rule's key state holding `state` (unmarked).
    fn into_key_state(state: Self::State) -> KeyState;

    /// The state of this kind a single-rate rule's key state holds, if it
    /// is of this kind.
    fn from_key_state(state: KeyState) -> Option<Self::State>;
}

rule_kinds! {$
    None(crate::algorithms::NoLimit),
    Fixed(crate::algorithms::FixedWindow),
    Log(crate::algorithms::SlidingLog),
    Token(crate::algorithms::TokenBucket),
    Window(crate::algorithms::SlidingWindow),
    Leaky(crate::algorithms::LeakyBucket),
    Smoothed(crate::algorithms::SmoothedRate),
}
