"""The frozen Model (issue 12): immutability, replace(), subs() checks, ModelConstants, declared
joint names, refused CasADi parameters, size limits, overflowing URDF values, one joint factory."""
import pickle
import time
import warnings

import numpy as np
import pytest
import sympy as sp

import symdyn as sd
import symdyn.model as model_mod
from symdyn.backends import get_backend
from symdyn.joints import Helical, Prismatic, Revolute, make_joint
from symdyn.model import (Body, Model, ModelConstants, ModelError, UnsupportedParameterError,
                          check_size)
from symdyn.models import (biped, binary_tree, branched_tree, paper004_chain, planar_chain,
                           quadruped, random_tree, serial_chain)
from symdyn.spatial import Transform
from symdyn.io.urdf import URDFError, load_urdf

NP = get_backend("numpy")

INERTIAL = ('<inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" '
            'iyz="0"/></inertial>')


def two_link_urdf(inertial=INERTIAL, origin='xyz="0 0 1"', axis='xyz="0 0 1"', extra=""):
    return f"""<robot name="r"><link name="base"/>
<link name="l">{inertial}</link>
<joint name="j" type="revolute"><parent link="base"/><child link="l"/><origin {origin}/>
<axis {axis}/></joint>{extra}</robot>"""


# --- 1. frozen ------------------------------------------------------------------------------------

def test_assigning_any_attribute_raises_and_points_to_replace():
    m = serial_chain(3)
    for attr, value in (("gravity", np.zeros(3)), ("name", "x"), ("Xtree", []), ("I", []),
                        ("_constants_cache", {}), ("brand_new", 1), ("joint_names", ())):
        with pytest.raises(AttributeError, match=r"immutable.*model\.replace"):
            setattr(m, attr, value)
    with pytest.raises(AttributeError, match="immutable"):
        del m.name


def test_fields_are_tuples_and_arrays_read_only():
    m = serial_chain(3, seed=1)
    for f in ("names", "parents", "joints", "joint_names", "Xtree", "I", "body_params", "q_idx",
              "v_idx", "children", "ancestors", "subtree", "depth"):
        assert isinstance(getattr(m, f), tuple), f
    with pytest.raises(ValueError, match="read-only"):
        m.I[0][0, 0] = 5.0
    with pytest.raises(ValueError, match="read-only"):
        m.Xtree[1].E[0, 0] = 5.0
    with pytest.raises(ValueError, match="read-only"):
        m.Xtree[1].r[0] = 5.0
    with pytest.raises(ValueError, match="read-only"):
        m.gravity[2] = 0.0
    with pytest.raises(ValueError, match="read-only"):
        m.body_params[0][2][0, 0] = 5.0
    with pytest.raises(TypeError, match="read-only"):
        m.frames["link1"] = None
    with pytest.raises(TypeError):
        m.parents[0] = 3


def test_symbolic_model_fields_are_immutable():
    m = planar_chain(2, symbolic_params=True)
    with pytest.raises(TypeError):
        m.I[0][0, 0] = 1
    with pytest.raises(TypeError):
        m.gravity[0] = 1


def test_pickle_and_copy_keep_the_model_usable():
    import copy

    m = serial_chain(3, seed=2)
    q, qd = m.random_q(0), np.ones(3)
    for m2 in (pickle.loads(pickle.dumps(m)), copy.copy(m), copy.deepcopy(m)):
        assert np.allclose(sd.rnea(m2, q, qd, qd), sd.rnea(m, q, qd, qd))
        with pytest.raises(AttributeError, match="immutable"):
            m2.name = "x"


# --- replace -------------------------------------------------------------------------------------

def test_replace_gravity_gives_a_new_validated_model_and_leaves_the_original():
    m = serial_chain(4, seed=3)
    q, qd = m.random_q(1), np.ones(4)
    tau = sd.rnea(m, q, qd, qd)           # fills m's constants cache first
    m0 = m.replace(gravity=np.zeros(3))
    assert m0 is not m and np.array_equal(m.gravity, [0, 0, -9.81])
    assert np.array_equal(m0.gravity, np.zeros(3))
    # the variant's constants are its own (a shared stale cache would keep gravity)
    assert np.allclose(sd.rnea(m0, q, qd, qd), tau - sd.gravity_vector(m, q))
    assert np.allclose(sd.rnea(m, q, qd, qd), tau)
    assert m.replace(name="other").name == "other" and m.name == "serial4"
    with pytest.raises(ModelError, match="gravity contains NaN"):
        m.replace(gravity=[np.nan, 0, 0])
    with pytest.raises(ModelError, match=r"gravity must have shape \(3,\)"):
        m.replace(gravity=[0, 0])


def test_replace_xtree_and_inertias():
    m = serial_chain(3)
    X = [Transform(np.eye(3), np.array([0.0, 0.0, 0.0]))] + list(m.Xtree[1:])
    X[1] = Transform(np.eye(3), np.array([2.0, 0.0, 0.0]))
    m2 = m.replace(Xtree=X)
    assert np.allclose(m2.Xtree[1].r, [2, 0, 0]) and np.allclose(m.Xtree[1].r, [1, 0, 0])
    params = m.constants(NP).inertia_params
    m3 = m.replace(inertias=[(2 * mass, c, 2 * Ic) for mass, c, Ic in params])
    q = m.random_q(0)
    assert np.allclose(sd.crba(m3, q), 2 * sd.crba(m, q))
    assert m3.body_params[0][0] == 2.0
    with pytest.raises(ModelError, match="Xtree has 2 entries but the model has 3 bodies"):
        m.replace(Xtree=X[:2])
    with pytest.raises(ModelError, match="X_tree rotation must have shape"):
        m.replace(Xtree=[Transform(np.eye(2), np.zeros(3))] * 3)


@pytest.mark.parametrize("bad, msg", [
    ((-1.0, (0, 0, 0), np.eye(3)), r"body 'link2'.*mass must be positive"),
    ((0.0, (0, 0, 0), np.eye(3)), r"body 'link2'.*mass must be positive"),
    ((np.nan, (0, 0, 0), np.eye(3)), r"body 'link2' mass is NaN"),
    ((1.0, (0, 0, np.inf), np.eye(3)), r"body 'link2' com contains NaN or inf"),
    ((1.0, (0, 0, 0), np.diag([1.0, 1.0, -1.0])), r"body 'link2'.*not positive definite"),
    ((1.0, (0, 0, 0), np.diag([1.0, 1.0, 3.0])), r"body 'link2'.*triangle inequality"),
])
def test_replace_inertias_applies_the_constructor_checks(bad, msg):
    m = serial_chain(3)
    params = list(m.constants(NP).inertia_params)
    params[1] = bad
    with pytest.raises(ModelError, match=msg):
        m.replace(inertias=params)


def test_replace_keeps_the_models_inertia_policy():
    m = paper004_chain(3)  # planar bodies: built with check_inertias=False
    params = list(m.constants(NP).inertia_params)
    assert m.replace(inertias=params).N == 3  # the planar inertia is accepted again
    params[0] = (-1.0, params[0][1], params[0][2])
    with pytest.raises(ModelError, match="'link1'.*mass must be positive"):
        m.replace(inertias=params)


def test_replace_unknown_field_and_other_fields():
    m = serial_chain(2)
    with pytest.raises(TypeError, match=r"unknown field\(s\) \['mass'\].*replaceable fields: name, gravity"):
        m.replace(mass=3)
    m2 = m.replace(joints=[Revolute("x"), Prismatic("y")], joint_names=["a", "b"])
    assert [j.type for j in m2.joints] == ["revolute", "prismatic"] and m2.joint_names == ("a", "b")
    with pytest.raises(ModelError, match="duplicate joint names"):
        m.replace(joint_names=["a", "a"])
    with pytest.raises(ModelError, match="moving symdyn Joint"):
        m.replace(joints=[Revolute("x"), "hinge"])


# --- 2. subs --------------------------------------------------------------------------------------

def _planar_values(**over):
    vals = {sp.Symbol(f"{k}{i}", positive=True): v for i in (1, 2)
            for k, v in (("m", 1.0), ("l", 1.0), ("lc", 0.5), ("I", 1.0 / 12))}
    for k, v in over.items():
        vals[sp.Symbol(k, positive=True)] = v
    return vals


def test_subs_gives_the_numeric_model():
    arm = planar_chain(2, symbolic_params=True)
    num = arm.subs(_planar_values())
    assert not num.is_symbolic
    q = np.array([0.3, -0.7])
    assert np.allclose(sd.crba(num, q), sd.crba(planar_chain(2), q))
    with pytest.raises(AttributeError, match="immutable"):
        num.gravity = np.zeros(3)


@pytest.mark.parametrize("over, msg", [
    ({"m1": -1.0}, r"body 'link1'.*mass must be positive"),
    ({"m2": 0.0}, r"body 'link2'.*mass must be positive"),
    ({"I2": -1.0}, r"body 'link2'.*not positive definite"),
    ({"m1": float("nan")}, r"body 'link1'.*NaN"),
    ({"lc1": float("inf")}, r"body 'link1'.*NaN or inf"),
    ({"l1": 1e200}, r"body 'link2' X_tree translation.*MAX_MAGNITUDE"),
    ({"m1": 1 + 2j}, r"not a real number"),
])
def test_subs_applies_the_constructor_checks(over, msg):
    arm = planar_chain(2, symbolic_params=True)
    with pytest.raises(ModelError, match=msg):
        arm.subs(_planar_values(**over))


def test_subs_missing_value_is_named():
    arm = planar_chain(2, symbolic_params=True)
    vals = _planar_values()
    del vals[sp.Symbol("m2", positive=True)]
    with pytest.raises(ModelError, match=r"no value given for \['m2'\]"):
        arm.subs(vals)


# --- constants ------------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["numpy", "casadi", "sympy"])
def test_constants_named_tuple_cached_once_per_backend(backend):
    B = get_backend(backend)
    m = serial_chain(3, seed=4)
    c = m.constants(B)
    assert isinstance(c, ModelConstants) and c._fields == ("Xtree", "I", "a_grav", "inertia_params",
                                                         "armature")
    assert m.constants(B) is c
    assert len(c.Xtree) == len(c.I) == len(c.inertia_params) == 3
    num = (lambda x: np.array(B.to_numpy(x) if hasattr(B, "to_numpy") else x, dtype=float)) \
        if backend != "casadi" else (lambda x: np.array(__import__("casadi").DM(x)))
    assert np.allclose(num(c.a_grav).ravel(), [0, 0, 0, 0, 0, 9.81])
    for (mass, com, Ic), p in zip(c.inertia_params, m.body_params):
        assert np.isclose(float(num(mass).ravel()[0]) if backend == "casadi" else float(mass), p[0])
        assert np.allclose(num(com).ravel(), p[1])
        assert np.allclose(num(Ic), p[2])
    assert np.allclose(num(c.Xtree[1].r).ravel(), m.Xtree[1].r)


def test_numpy_constants_vectors_are_flat():
    c = serial_chain(2).constants(NP)
    assert c.Xtree[1].r.shape == (3,) and c.a_grav.shape == (6,)


def test_nothing_outside_the_model_writes_its_cache():
    import inspect

    import symdyn.algorithms.rnea_derivatives as rd

    assert "_cache" not in inspect.getsource(rd)
    m = serial_chain(3)
    q = m.random_q(0)
    sd.rnea_derivatives(m, q, np.ones(3), np.zeros(3))
    assert set(m._constants_cache) == {"numpy"}


# --- joint names ----------------------------------------------------------------------------------

def test_joint_names_declared_at_construction():
    m = serial_chain(2)
    assert m.joint_names == ("link1_joint", "link2_joint")
    named = Model([Body("a", None, Revolute("z"), joint_name="shoulder"),
                   Body("b", "a", Revolute("y"))])
    assert named.joint_names == ("shoulder", "b_joint")
    with pytest.raises(ModelError, match=r"duplicate joint names \['j'\]"):
        Model([Body("a", None, Revolute("z"), joint_name="j"),
               Body("b", "a", Revolute("y"), joint_name="j")])
    u = load_urdf(two_link_urdf())
    assert u.joint_names == ("j",)


def test_to_pinocchio_uses_the_declared_joint_names():
    pytest.importorskip("pinocchio")
    from symdyn.interop.pinocchio import to_pinocchio

    m = Model([Body("a", None, Revolute("z"), joint_name="shoulder"),
               Body("b", "a", Revolute("y"), X_tree=Transform(np.eye(3), np.array([1.0, 0, 0])))])
    pm = to_pinocchio(m)
    assert list(pm.names)[1:] == ["shoulder", "b_joint"]


# --- 3. CasADi parameters -------------------------------------------------------------------------

@pytest.mark.parametrize("where", ["mass", "com", "inertia", "X_tree", "gravity"])
def test_casadi_symbolic_parameters_are_refused_clearly(where):
    ca = pytest.importorskip("casadi")
    s = ca.SX.sym("p")
    kw = dict(mass=1.0, com=(0.0, 0.0, 0.0), inertia=np.eye(3), X_tree=None)
    gravity = (0.0, 0.0, -9.81)
    if where == "mass":
        kw["mass"] = s
    elif where == "com":
        kw["com"] = ca.vertcat(s, 0, 0)
    elif where == "inertia":
        kw["inertia"] = ca.SX.eye(3) * s
    elif where == "X_tree":
        kw["X_tree"] = Transform(np.eye(3), [s, 0.0, 0.0])
    else:
        gravity = (0.0, 0.0, s)
    with pytest.raises(UnsupportedParameterError, match=r"CasADi SX.*SymPy.*not supported") as info:
        Model([Body("a", None, Revolute("z"), **kw)], gravity=gravity)
    assert isinstance(info.value, TypeError) and isinstance(info.value, ModelError)
    assert "NaN" not in str(info.value)


def test_casadi_symbolic_parameters_are_refused_by_replace():
    ca = pytest.importorskip("casadi")
    m = serial_chain(2)
    with pytest.raises(UnsupportedParameterError, match="CasADi SX"):
        m.replace(gravity=ca.SX.sym("g", 3))
    with pytest.raises(UnsupportedParameterError, match="CasADi SX"):
        m.replace(inertias=[(ca.SX.sym("m"), (0, 0, 0), np.eye(3))] * 2)


# --- 4. sizes -------------------------------------------------------------------------------------

BUILDERS = [
    ("serial_chain", lambda n, **k: serial_chain(n, **k)),
    ("branched_tree", lambda n, **k: branched_tree(n, 3, **k)),
    ("binary_tree", lambda n, **k: binary_tree(n, **k)),
    ("biped", lambda n, **k: biped(n, **k)),
    ("quadruped", lambda n, **k: quadruped(n, **k)),
    ("planar_chain", lambda n, **k: planar_chain(n, **k)),
    ("planar_chain_symbolic", lambda n, **k: planar_chain(n, symbolic_params=True, **k)),
    ("paper004_chain", lambda n, **k: paper004_chain(n, **k)),
    ("random_tree", lambda n, **k: random_tree(n, **k)),
]


@pytest.mark.parametrize("name, build", BUILDERS, ids=[b[0] for b in BUILDERS])
def test_absurd_sizes_are_refused_before_allocating(name, build):
    t0 = time.perf_counter()
    with pytest.raises(ModelError, match=r"100000000[01] bodies requested, more than the limit of "
                                         r"10000.*max_bodies=.*SYMDYN_MAX_BODIES"):
        build(1_000_000_000)
    assert time.perf_counter() - t0 < 1.0


def test_size_limit_overrides(monkeypatch):
    with pytest.raises(ModelError, match="limit of 5 bodies"):
        serial_chain(6, max_bodies=5)
    assert serial_chain(6, max_bodies=6).N == 6
    monkeypatch.setenv("SYMDYN_MAX_BODIES", "4")
    with pytest.raises(ModelError, match="5 bodies requested, more than the limit of 4"):
        serial_chain(5)
    assert serial_chain(5, max_bodies=5).N == 5  # the argument beats the environment
    with pytest.raises(ModelError, match="limit of 4"):
        Model([Body(f"b{i}", None if i == 0 else f"b{i - 1}", Revolute("z")) for i in range(5)])
    monkeypatch.setenv("SYMDYN_MAX_BODIES", "many")
    with pytest.raises(ValueError, match="SYMDYN_MAX_BODIES must be a positive integer, got 'many'"):
        serial_chain(2)
    monkeypatch.delenv("SYMDYN_MAX_BODIES")
    monkeypatch.setattr(model_mod, "MAX_BODIES", 3)
    with pytest.raises(ModelError, match="limit of 3"):
        check_size(4)
    with pytest.raises(ValueError, match="max_bodies must be a positive integer"):
        serial_chain(2, max_bodies=0)


def test_spec_string_sizes_are_refused():
    from_spec = pytest.importorskip("symdyn.io.specs").from_spec
    for spec in ("serial:1000000000", "binary:1000000000", "branched:1000000000:5",
                 "biped:1000000000", "quadruped:1000000000:floating", "planar:1000000000",
                 "paper004:1000000000", "random:1000000000"):
        with pytest.raises(ValueError, match="100000000[01] bodies requested.*SYMDYN_MAX_BODIES"):
            from_spec(spec)


def test_urdf_with_too_many_links_is_refused_after_parsing(monkeypatch):
    n = model_mod.MAX_BODIES + 1
    links = "".join(f'<link name="l{i}"/>' for i in range(n))
    xml = f'<robot name="big">{links}</robot>'
    built = []
    monkeypatch.setattr("symdyn.io.urdf.Model", lambda *a, **k: built.append(1))
    with pytest.raises(URDFError, match=rf"{n} <link> elements: {n} bodies requested, more than "
                                        r"the limit of 10000.*max_bodies=.*SYMDYN_MAX_BODIES"):
        load_urdf(xml)
    assert not built
    monkeypatch.undo()
    small = two_link_urdf()
    with pytest.raises(URDFError, match="2 <link> elements.*limit of 1 bodies"):
        load_urdf(small, max_bodies=1)
    assert load_urdf(small, max_bodies=2).N == 1


# --- 5. overflowing URDF values -------------------------------------------------------------------

def _inertial(mass="1", xyz="0 0 0", i="0.1"):
    return (f'<inertial><origin xyz="{xyz}"/><mass value="{mass}"/><inertia ixx="{i}" iyy="{i}" '
            f'izz="{i}" ixy="0" ixz="0" iyz="0"/></inertial>')


@pytest.mark.parametrize("xml, msg", [
    (two_link_urdf(inertial=_inertial(mass="1e308", i="1e308")), r"link 'l'.*<mass value='1e308'>.*MAX_MAGNITUDE"),
    (two_link_urdf(inertial=_inertial(i="1e308")), r"link 'l'.*<inertia ixx='1e308'>.*MAX_MAGNITUDE"),
    (two_link_urdf(origin='xyz="1e400 0 0"'), r"joint 'j'.*<origin xyz='1e400 0 0'>: NaN or inf"),
    (two_link_urdf(origin='xyz="1e200 0 0"'), r"joint 'j'.*<origin xyz='1e200 0 0'>.*MAX_MAGNITUDE"),
    (two_link_urdf(axis='xyz="1e200 1e200 0"'), r"joint 'j'.*<axis.*MAX_MAGNITUDE"),
    # each value below the limit, but m c c^T overflows the limit: the Model names the link
    (two_link_urdf(inertial=_inertial(mass="1e99", xyz="1e99 0 0")),
     r"link 'l': spatial inertia has an entry of magnitude 1e\+297"),
])
def test_overflowing_urdf_values_name_the_link_or_joint(xml, msg):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning, no LinAlgError on the way
        with pytest.raises(URDFError, match=msg) as info:
            load_urdf(xml)
    assert "check_inertias=False" not in str(info.value)


def test_overflow_in_merged_fixed_links_is_named():
    fixed = "".join(
        f'<link name="f{k}">{_inertial(mass="1e60")}</link><joint name="jf{k}" type="fixed">'
        f'<parent link="{"l" if k == 1 else f"f{k - 1}"}"/><child link="f{k}"/>'
        f'<origin xyz="9e99 0 0"/></joint>' for k in (1, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(URDFError, match=r"link 'f1': spatial inertia merged into body 'l'.*"
                                            "MAX_MAGNITUDE"):
            load_urdf(two_link_urdf(extra=fixed))


def test_model_constants_above_the_magnitude_limit():
    with pytest.raises(ModelError, match=r"body 'a' mass is 1e\+200, above symdyn.model.MAX_MAGNITUDE"):
        Model([Body("a", None, Revolute("z"), mass=1e200, inertia=np.eye(3) * 1e200)])
    with pytest.raises(ModelError, match=r"body 'a' com has an entry of magnitude 1e\+300"):
        Model([Body("a", None, Revolute("z"), com=(1e300, 0, 0))])


# --- 6. one joint factory -------------------------------------------------------------------------

def test_make_joint_is_the_factory():
    h = make_joint("helical", "x", pitch=0.3)
    assert isinstance(h, Helical) and h.pitch == 0.3 and h.axis_spec == "x"
    assert make_joint("helical").pitch == 0.1
    assert isinstance(make_joint("continuous", (0, 0, 2)), Revolute)
    with pytest.raises(ValueError, match="joint type 'revolute' takes no pitch"):
        make_joint("revolute", pitch=0.2)
    with pytest.raises(ValueError, match=r"unknown joint type 'hinge'; known: .*revolute"):
        make_joint("hinge")
    with pytest.raises(ValueError, match="unknown joint type 3"):
        make_joint(3)


@pytest.mark.parametrize("build", [
    lambda: serial_chain(4, joint=("revolute", "prismatic", "helical", "spherical")),
    lambda: serial_chain(4, joint=("revolute", "prismatic", "helical", "planar"), seed=1),
    lambda: random_tree(5, joint_kinds=("helical", "spherical"), floating_base=True),
    lambda: biped(4, floating=True),
    lambda: planar_chain(2),
    lambda: paper004_chain(2),
    lambda: load_urdf(two_link_urdf()),
], ids=["deterministic", "seeded", "random_tree", "biped", "planar", "paper004", "urdf"])
def test_builders_and_urdf_construct_joints_through_make_joint(build, monkeypatch):
    import symdyn.joints as joints_mod
    import symdyn.models as models_mod
    import symdyn.io.urdf as urdf_mod

    calls = []

    def spy(kind, *a, **k):
        calls.append(kind)
        return joints_mod.make_joint(kind, *a, **k)

    monkeypatch.setattr(models_mod, "make_joint", spy)
    monkeypatch.setattr(urdf_mod, "make_joint", spy)
    m = build()
    assert len(calls) >= m.N  # every joint (fixed ones included) came from the factory
    assert {j.type for j in m.joints} <= {joints_mod.JOINT_TYPES[k].type for k in calls}


def test_constructor_options_are_validated_and_kept():
    with pytest.raises(ValueError, match="check_inertias must be True, False or 'semidefinite'"):
        Model([Body("a", None, Revolute("z"))], check_inertias="yes")
    m = Model.from_parent_array([-1, 0], [Revolute("z"), Revolute("y")],
                                [Transform(np.eye(3), np.zeros(3))] * 2,
                                [(1.0, (0, 0, 0), np.eye(3))] * 2, joint_names=["j1", "j2"])
    assert m.joint_names == ("j1", "j2") and m.check_inertias is True
    with pytest.raises(ModelError, match="joint_names has 1 entries but parents has 2"):
        Model.from_parent_array([-1, 0], [Revolute("z"), Revolute("y")],
                                [Transform(np.eye(3), np.zeros(3))] * 2,
                                [(1.0, (0, 0, 0), np.eye(3))] * 2, joint_names=["j1"])
    u = load_urdf(two_link_urdf())
    assert u.check_inertias == "semidefinite" and u.allow_massless
    assert load_urdf(two_link_urdf(), check_inertias=False).check_inertias is False


def test_replace_on_a_urdf_model_keeps_the_urdf_policy():
    u = load_urdf(two_link_urdf())
    point_mass = [(2.0, (0.0, 0.0, 0.1), np.zeros((3, 3)))]  # a point mass passes the URDF policy
    assert u.replace(inertias=point_mass).body_params[0][0] == 2.0
    with pytest.raises(ModelError, match="'l'.*negative principal moment"):
        u.replace(inertias=[(1.0, (0, 0, 0), np.diag([1.0, 1.0, -0.5]))])
