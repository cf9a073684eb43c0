7
xplaceholder"
dtype("
shape2
ÿÿÿÿÿÿÿÿÿ
hrelux
ynegh*#
predict

xx
yy:
hh