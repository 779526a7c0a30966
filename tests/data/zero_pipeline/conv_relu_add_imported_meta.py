metadata = tvm.ir.load_json("""{
  \"root_index\": 36,
  \"nodes\": [
    {
      \"type\": \"ffi.String\",
      \"data\": \"ir.GenericConst\"
    },
    {
      \"type\": \"None\"
    },
    {
      \"type\": \"ir.PrimType\",
      \"data\": {
        \"span\": 1,
        \"dtype\": \"int64\"
      }
    },
    {
      \"type\": \"int\",
      \"data\": 4
    },
    {
      \"type\": \"ir.IntImm\",
      \"data\": {
        \"span\": 1,
        \"ty\": 2,
        \"value\": 3
      }
    },
    {
      \"type\": \"int\",
      \"data\": 3
    },
    {
      \"type\": \"ir.IntImm\",
      \"data\": {
        \"span\": 1,
        \"ty\": 2,
        \"value\": 5
      }
    },
    {
      \"type\": \"ir.IntImm\",
      \"data\": {
        \"span\": 1,
        \"ty\": 2,
        \"value\": 5
      }
    },
    {
      \"type\": \"ir.IntImm\",
      \"data\": {
        \"span\": 1,
        \"ty\": 2,
        \"value\": 5
      }
    },
    {
      \"type\": \"ffi.Array\",
      \"data\": [
        4,
        6,
        7,
        8
      ]
    },
    {
      \"type\": \"relax.ShapeType\",
      \"data\": {
        \"span\": 1,
        \"values\": 9,
        \"ndim\": 4
      }
    },
    {
      \"type\": \"relax.expr.ShapeExpr\",
      \"data\": {
        \"span\": 1,
        \"ty\": 10,
        \"values\": 9
      }
    },
    {
      \"type\": \"ir.PrimType\",
      \"data\": {
        \"span\": 1,
        \"dtype\": \"float32\"
      }
    },
    {
      \"type\": \"relax.TensorType\",
      \"data\": {
        \"span\": 1,
        \"shape\": 11,
        \"dtype\": 12,
        \"vdevice\": 1,
        \"ndim\": 4
      }
    },
    {
      \"type\": \"ffi.Tensor\",
      \"data\": \"P6G0lvBAXt0AAAAAAAAAAAEAAAAAAAAABAAAAAIgAQAEAAAAAAAAAAMAAAAAAAAAAwAAAAAAAAADAAAAAAAAALABAAAAAAAAq\\/DHPZpa3D6bdVI+bte3Pd9aHL5EZZU+jaT\\/vXmWSD81ZW0\\/N7ZuvvxcFT8KtWw98loLPs3nWT8poVu\\/ymNTv++ldb8mTSo\\/kGoOPztyPT93DXU\\/UCsZP9HHnb2FoQ8\\/iXFDv3VHjz5mmja\\/patjP0D7Mj25xS6+VRjxvlxoDD+2m7O9GScMPi9hdr\\/h6nA+cZJlPhd7bz7zMmM\\/Gi+6Pindj75k9QC+1V\\/KPiEqYb\\/lxKo+sruuPr1IFL9f\\/T2\\/WgC9vmePi75Tww8++3z7vSMMej\\/IwEu\\/Gw4Vv9doLb9uyJw+IKH8vrf9ib2m2gK\\/ipsuv+l8R7\\/dFKA+FkA5v49ZG7\\/pbIa+OlkkP75ITr8dBy0\\/McxOv3\\/ycz+ZZ4C9CBp0Pz+5Vj6DAfU+lO9rv9pn3r6ZdUK\\/oMDQvh82Q7+eYrq+4pYvvg8oX79pF8U+WGYIPr098L60cj49COdPv9aJGz62zFs\\/D8m5vqBtqz7+hDy\\/4YTdPu6l176+NCK\\/si0xPne0db\\/Uaig\\/jph9v4oVtj4Ig+u+tNbwPvqjbD9uowC\\/YPgbPnuAPD7P+BM+\"
    },
    {
      \"type\": \"ir.GenericConst\",
      \"data\": {
        \"span\": 1,
        \"ty\": 13,
        \"value\": 14
      }
    },
    {
      \"type\": \"ir.IntImm\",
      \"data\": {
        \"span\": 1,
        \"ty\": 2,
        \"value\": 3
      }
    },
    {
      \"type\": \"ffi.Array\",
      \"data\": [
        16
      ]
    },
    {
      \"type\": \"relax.ShapeType\",
      \"data\": {
        \"span\": 1,
        \"values\": 17,
        \"ndim\": 1
      }
    },
    {
      \"type\": \"relax.expr.ShapeExpr\",
      \"data\": {
        \"span\": 1,
        \"ty\": 18,
        \"values\": 17
      }
    },
    {
      \"type\": \"relax.TensorType\",
      \"data\": {
        \"span\": 1,
        \"shape\": 19,
        \"dtype\": 12,
        \"vdevice\": 1,
        \"ndim\": 1
      }
    },
    {
      \"type\": \"ffi.Tensor\",
      \"data\": \"P6G0lvBAXt0AAAAAAAAAAAEAAAAAAAAAAQAAAAIgAQAEAAAAAAAAABAAAAAAAAAAP8gNv7jOZz8Pk9i9elwxPw==\"
    },
    {
      \"type\": \"ir.GenericConst\",
      \"data\": {
        \"span\": 1,
        \"ty\": 20,
        \"value\": 21
      }
    },
    {
      \"type\": \"int\",
      \"data\": 1
    },
    {
      \"type\": \"ir.IntImm\",
      \"data\": {
        \"span\": 1,
        \"ty\": 2,
        \"value\": 23
      }
    },
    {
      \"type\": \"ir.IntImm\",
      \"data\": {
        \"span\": 1,
        \"ty\": 2,
        \"value\": 3
      }
    },
    {
      \"type\": \"int\",
      \"data\": 6
    },
    {
      \"type\": \"ir.IntImm\",
      \"data\": {
        \"span\": 1,
        \"ty\": 2,
        \"value\": 26
      }
    },
    {
      \"type\": \"ir.IntImm\",
      \"data\": {
        \"span\": 1,
        \"ty\": 2,
        \"value\": 26
      }
    },
    {
      \"type\": \"ffi.Array\",
      \"data\": [
        24,
        25,
        27,
        28
      ]
    },
    {
      \"type\": \"relax.ShapeType\",
      \"data\": {
        \"span\": 1,
        \"values\": 29,
        \"ndim\": 4
      }
    },
    {
      \"type\": \"relax.expr.ShapeExpr\",
      \"data\": {
        \"span\": 1,
        \"ty\": 30,
        \"values\": 29
      }
    },
    {
      \"type\": \"relax.TensorType\",
      \"data\": {
        \"span\": 1,
        \"shape\": 31,
        \"dtype\": 12,
        \"vdevice\": 1,
        \"ndim\": 4
      }
    },
    {
      \"type\": \"ffi.Tensor\",
      \"data\": \"P6G0lvBAXt0AAAAAAAAAAAEAAAAAAAAABAAAAAIgAQABAAAAAAAAAAQAAAAAAAAABgAAAAAAAAAGAAAAAAAAAEACAAAAAAAATETMPrBsz74cqiA\\/zPRTvvUfQz9kciY+0XJDPwAnxT4PqeY+4pYtO8uDaT8rcpM+4vEbvq\\/kWT5PLHa\\/+S\\/LvogEpD7l9da+E7JxPrfhEb4lozq\\/FI\\/OvsNJDz6AGzo+1jcYPq3gnD72wJs+fnQMvigISz\\/cnYe+QFkDvi6qSD91xRw\\/K8jQPhCvTL9txlY\\/EmLbPuBofz+DezO\\/BXs8P7rNLL9+qmw+q5pAvyIuMj\\/pWB0\\/sIQNPq8WPr4llly\\/xSrKPgdKvr2LYuM+d5Y7P453cz\\/bKzY\\/nQB6v+lhj76lgus+KCAov\\/ZULD3QLWS\\/DpoZv1CEdr+MXxY\\/vlkNvyFcnr55LVs\\/AlLRPs+yb781rSu\\/q8l4PgYqHj7qMga\\/TFFeP\\/xmaT6085E9uSI4Phyl6z5+kcC+enFQvlyPFL9PqyC\\/x4RjP85M9T6oUpy8T5ALv\\/mJ+74ASmK\\/lFAGvpW4wL5EDsk+Pl16vv0KJL9PXXO\\/dZFdv72ytz5hqL29FdSVPYAYSz+1DXs\\/4fIQv\\/n9pj6eW\\/K+O211vzVKBD9tTbi+e6puvprfND4vfyk\\/0ROEPhHMPj+Z5Oe+mJkYP1P0IL9P1Gc\\/7fy\\/PvqoEb\\/CDWU\\/d2XsPrn2+77GyBK\\/qhkVPVbccr97xhW\\/gT4avpbZgL7wMZW9TbXjvv67MT5ISzo\\/3dJDv6FeDj2SYTy\\/dxDePqfeVL6c+wU+JSkiv4TWNb+Xr8O8QdqTvkyAYT+22Ac\\/raH+Plu0Tj+oSVW\\/\"
    },
    {
      \"type\": \"ir.GenericConst\",
      \"data\": {
        \"span\": 1,
        \"ty\": 32,
        \"value\": 33
      }
    },
    {
      \"type\": \"ffi.Array\",
      \"data\": [
        15,
        22,
        34
      ]
    },
    {
      \"type\": \"ffi.Map\",
      \"data\": [
        0,
        35
      ]
    }
  ],
  \"metadata\": {
    \"tvm_version\": \"0.27.0.post1\"
  }
}""")
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 3, 8, 8), dtype="float32")) -> R.Tensor((1, 4, 6, 6), dtype="float32"):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            lv: R.Tensor((1, 4, 6, 6), dtype="float32") = R.nn.conv2d(x, metadata["ir.GenericConst"][0], strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype=None)
            lv1: R.Tensor((1, 4, 1, 1), dtype="float32") = R.reshape(metadata["ir.GenericConst"][1], R.shape([1, 4, 1, 1]))
            lv2: R.Tensor((1, 4, 6, 6), dtype="float32") = R.add(lv, lv1)
            lv3: R.Tensor((1, 4, 6, 6), dtype="float32") = R.nn.relu(lv2)
            gv: R.Tensor((1, 4, 6, 6), dtype="float32") = R.add(lv3, metadata["ir.GenericConst"][2])
            R.output(gv)
        return gv